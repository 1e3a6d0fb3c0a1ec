package agentsdk_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/npmtest"
)

// readmeCommand is one command of README.md's ```sh blocks.
type readmeCommand struct {
	line   int    // README.md's line where it begins
	block  int    // the line of its block
	text   string // its lines, continuations joined
	sample string // the "# " lines right after it: what it prints, … standing for anything
}

// readmeCommands are the commands of readme's ```sh blocks, in order.
func readmeCommands(readme string) []readmeCommand {
	var (
		cmds    []readmeCommand
		inBlock bool
		block   int
		cur     *readmeCommand
	)
	lines := strings.Split(readme, "\n")
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		switch {
		case !inBlock && trimmed == "```sh":
			inBlock, block, cur = true, i+1, nil
			continue
		case !inBlock:
			continue
		case trimmed == "```":
			inBlock = false
			continue
		}
		switch {
		case cur != nil && strings.HasSuffix(cur.text, "\\"):
			cur.text = strings.TrimSuffix(cur.text, "\\") + " " + trimmed
		case strings.HasPrefix(trimmed, "#") && cur != nil:
			cur.sample += strings.TrimPrefix(strings.TrimPrefix(trimmed, "#"), " ") + "\n"
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
		default:
			cmds = append(cmds, readmeCommand{line: i + 1, block: block, text: trimmed})
			cur = &cmds[len(cmds)-1]
		}
	}
	return cmds
}

// What the test does with a command: the first rule whose prefix the
// command starts with.
type commandRule struct {
	prefix string
	do     string // run, serve (in the background, until the next serve or the test's end), serve-talk (serve, then a turn through it), check-serve (start, then stop), cd, init, set (VAR=…), npm, skip, skip-block (this and the rest of its block)
	why    string // for skip: why it cannot run here
}

// readmeRules say how each README command runs. A command no rule names,
// or a rule no command uses, fails the test: a command added to the
// README is run, or skipped here with the reason.
var readmeRules = []commandRule{
	{prefix: "go run ./cmd/agent-sdk serve --dir examples/quickstart", do: "check-serve"},
	{prefix: "./test.sh", do: "skip", why: "runs every test, this one among them"},
	{prefix: "go install ./cmd/agent-sdk", do: "run"},
	{prefix: "go install -v ./cmd/agent-sdk", do: "run"},
	{prefix: "agent-sdk serve --dir examples/quickstart", do: "check-serve"},
	{prefix: "agent-sdk init myagent --sdk .", do: "init"},
	{prefix: "cd myagent", do: "cd"},
	{prefix: "agent-sdk call inspect_pr --dir .", do: "run"},
	{prefix: "agent-sdk serve --dir . --public-url", do: "skip-block", why: "runners need a host at a public URL and the model's own credentials"},
	{prefix: "agent-sdk serve --dir . --store 'postgres://", do: "skip-block", why: "needs PostgreSQL (store/postgres and cmd/agent-sdk's postgres tests run it)"},
	{prefix: "agent-sdk serve --dir . --record", do: "serve-talk"},
	{prefix: "agent-sdk serve --dir . --replay", do: "serve-talk"},
	{prefix: "agent-sdk serve --dir .", do: "serve"},
	{prefix: "curl ", do: "run"},
	{prefix: "agent-sdk call inspect_pr --url", do: "run"},
	{prefix: "agent-sdk tools --url", do: "run"},
	{prefix: "agent-sdk send new", do: "run"},
	{prefix: "agent-sdk send sess_…", do: "run"},
	{prefix: "agent-sdk sessions --url", do: "run"},
	{prefix: "agent-sdk events sess_…", do: "skip", why: "follows the live stream until interrupted (cmd/agent-sdk's TestRemoteGolden runs it)"},
	{prefix: "agent-sdk compact sess_…", do: "run"},
	{prefix: "agent-sdk cancel sess_…", do: "skip", why: "needs a running turn (cmd/agent-sdk's cancel tests)"},
	{prefix: "agent-sdk usage --url", do: "run"},
	{prefix: "agent-sdk approvals --url", do: "run"},
	{prefix: "agent-sdk approve tool_promote_build_…", do: "skip", why: "needs the gated tool promote_build, which myagent lacks (TestCallParkedSaysAtOnce, TestApprovalsEndToEnd)"},
	{prefix: "agent-sdk deny tool_promote_build_…", do: "skip", why: "as approve"},
	{prefix: "agent-sdk call promote_build --url", do: "skip", why: "as approve; TestCallParkedSaysAtOnce checks these lines"},
	{prefix: "agent-sdk audit export --url", do: "run"},
	{prefix: "agent-sdk audit verify --url", do: "run"},
	{prefix: "agent-sdk audit verify audit.jsonl", do: "run"},
	{prefix: "agent-sdk schedules --url", do: "run"},
	{prefix: "agent-sdk schedules run triage", do: "skip", why: "needs the triage schedule of the Schedules section's example"},
	{prefix: "export SLACK_BOT_TOKEN", do: "skip-block", why: "needs a Slack app's secrets"},
	{prefix: "export GITHUB_APP_PRIVATE_KEY", do: "skip-block", why: "needs a GitHub App's private key"},
	{prefix: "agent-sdk eval run evals/weather.yaml", do: "skip", why: "needs the Evals section's eval file and model answers it scores (cmd/agent-sdk's eval tests)"},
	{prefix: "agent-sdk eval list --url", do: "run"},
	{prefix: "agent-sdk eval show eval_…", do: "skip", why: "needs an eval batch"},
	{prefix: "export AGENT_SDK_STORE='postgres://", do: "skip-block", why: "needs PostgreSQL (cmd/agent-sdk's multihost tests)"},
	{prefix: "mkdir -p /tmp/mcp-inspector/run", do: "run"},
	{prefix: "TOKEN=$(cat .agent-sdk/token)", do: "set"},
	{prefix: "(cd /tmp/mcp-inspector/run && npx", do: "npm"},
}

// readmeInput stands for README's '{…}' inputs.
const readmeInput = `{"prUrl":"https://github.com/acme/checkout/pull/42"}`

// The README's commands work as written: every one of its ```sh blocks'
// commands runs, in order, as a reader runs them — the CLI installed with
// go install, an agent made with init, the tool the README gives added,
// served — with what cannot be had offline skipped (readmeRules, each
// with its reason). Substituted: a free port for 127.0.0.1:3000, a real
// session and input for sess_… and '{…}', the URL for --url …, and a model
// provider speaking Anthropic's API (internal/fakemodel). A command that
// fails, or prints other than the sample under it, fails the test.
func TestREADMECommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and two agents")
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	url := "http://" + addr + "/myagent"
	fake := fakemodel.New()
	fake.SetDefault(fakemodel.Reply{Text: []string{"The PR looks ready."}})
	t.Cleanup(fake.Close)
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "GOBIN="+bin,
		"ANTHROPIC_BASE_URL="+fake.AnthropicURL(), "ANTHROPIC_API_KEY=test-key", "NO_COLOR=1")
	setEnv := func(k, v string) { env = append(env, k+"="+v) }
	dir := repo
	session := ""
	var serving *readmeServe // the serve command running now

	cmds := readmeCommands(string(readme))
	used := map[string]bool{}
	skipBlock := 0
	for _, c := range cmds {
		if skipBlock == c.block {
			t.Logf("README.md:%d: skipped with its block: %s", c.line, c.text)
			continue
		}
		rule, ok := ruleFor(c.text)
		if !ok {
			t.Errorf("README.md:%d: no rule in readmeRules for %q: run it or skip it with the reason", c.line, c.text)
			continue
		}
		used[rule.prefix] = true
		name := fmt.Sprintf("line%d", c.line)
		text := strings.ReplaceAll(c.text, "127.0.0.1:3000", addr)
		text = strings.ReplaceAll(text, "--url …", "--url "+url)
		text = strings.ReplaceAll(text, "'{…}'", "'"+readmeInput+"'")
		if strings.Contains(text, "sess_…") {
			if session == "" {
				t.Fatalf("README.md:%d: %q needs a session, and none was made before it", c.line, c.text)
			}
			text = strings.ReplaceAll(text, "sess_…", session)
		}
		switch rule.do {
		case "skip":
			t.Logf("README.md:%d: skipped (%s): %s", c.line, rule.why, c.text)
		case "skip-block":
			skipBlock = c.block
			t.Logf("README.md:%d: skipped with the rest of its block (%s): %s", c.line, rule.why, c.text)
		case "cd":
			dir = filepath.Join(tmp, strings.TrimSpace(strings.TrimPrefix(text, "cd ")))
			addReadmeTool(t, string(readme), dir)
		case "init":
			// In a scratch directory rather than the checkout, with --sdk
			// naming the checkout as "." did.
			text = strings.Replace(text, " --sdk .", " --sdk "+repo, 1)
			runReadme(t, name, tmp, env, c, text)
		case "set":
			k, v, _ := strings.Cut(text, "=")
			setEnv(k, shellValue(t, dir, env, v))
		case "check-serve", "serve", "serve-talk":
			// A reader stops the server before starting another (they
			// share the port).
			if serving != nil {
				serving.stop()
				serving = nil
			}
			s := startReadmeServe(t, dir, env, c, strings.Replace(text, " serve ", " serve --addr "+addr+" ", 1))
			if rule.do == "check-serve" {
				s.stop()
				continue
			}
			serving = s
			t.Cleanup(s.stop)
			tok, err := os.ReadFile(filepath.Join(dir, ".agent-sdk", "token"))
			if err != nil {
				t.Fatal(err)
			}
			setEnv("TOKEN", strings.TrimSpace(string(tok)))
			if rule.do == "serve-talk" { // "talk to it": a turn, recorded or replayed
				talk := `agent-sdk send new "Inspect https://github.com/acme/checkout/pull/42" --url ` + url + ` --follow`
				runReadme(t, name, dir, env, c, talk)
			}
		case "npm":
			t.Run(name, func(t *testing.T) {
				npmtest.Install(t, "@modelcontextprotocol/inspector-cli", "1.0.3") // skips (fails under CI=true) without npm and its registry
				out := runReadme(t, name, dir, env, c, text)
				if !strings.Contains(out, `"name": "inspect_pr"`) {
					t.Errorf("README.md:%d: the Inspector listed no inspect_pr:\n%s", c.line, out)
				}
			})
		case "run":
			out := runReadme(t, name, dir, env, c, text)
			if c.sample != "" && !matchesSample(out, c.sample) {
				t.Errorf("README.md:%d: %s printed\n%s\nnot what README shows under it:\n%s", c.line, c.text, out, c.sample)
			}
			if session == "" {
				session = regexp.MustCompile(`sess_[a-z0-9]+`).FindString(out)
			}
		}
	}
	// The Go the README names is go.mod's, and that of an agent init made.
	named := regexp.MustCompile(`need only Go (\S+) or newer`).FindStringSubmatch(string(readme))
	if named == nil {
		t.Errorf("README.md no longer says which Go it needs (\"need only Go … or newer\")")
	}
	for _, mod := range []string{filepath.Join(repo, "go.mod"), filepath.Join(tmp, "myagent", "go.mod")} {
		b, err := os.ReadFile(mod)
		if err != nil {
			t.Error(err)
			continue
		}
		line := regexp.MustCompile(`(?m)^go (\S+)$`).FindStringSubmatch(string(b))
		if named != nil && (line == nil || line[1] != named[1]) {
			t.Errorf("README.md names Go %s; %s has %q", named[1], mod, line)
		}
	}
	for _, r := range readmeRules {
		if !used[r.prefix] {
			t.Errorf("readmeRules has %q, which no README command starts with: drop it", r.prefix)
		}
	}
}

// ruleFor is the rule of a command.
func ruleFor(text string) (commandRule, bool) {
	for _, r := range readmeRules {
		if strings.HasPrefix(text, r.prefix) {
			return r, true
		}
	}
	return commandRule{}, false
}

// addReadmeTool writes the tool README gives as agent/tools/inspect_pr.go
// (its first go block after that name) into the agent in dir.
func addReadmeTool(t *testing.T, readme, dir string) {
	t.Helper()
	const file = "agent/tools/inspect_pr.go"
	i := strings.Index(readme, "`"+file+"`")
	if i < 0 {
		t.Fatalf("README.md no longer names %s", file)
	}
	rest := readme[i:]
	j := strings.Index(rest, "```go\n")
	k := strings.Index(rest[j+len("```go\n"):], "```")
	if j < 0 || k < 0 {
		t.Fatalf("README.md has no go block after %s", file)
	}
	src := rest[j+len("```go\n") : j+len("```go\n")+k]
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(file)), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// The model of the Sessions section, for the turns its commands start.
	if err := os.WriteFile(filepath.Join(dir, "agent", "agent.yaml"), []byte("model:\n  provider: anthropic\n  name: claude-sonnet-4-5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runReadme runs one command with sh in dir and returns its standard
// output; a failure fails t.
func runReadme(t *testing.T, name, dir string, env []string, c readmeCommand, text string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", text)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("README.md:%d (%s): %s\n%v\nstdout:\n%s\nstderr:\n%s", c.line, name, text, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// shellValue is what sh makes of a variable's value, such as
// $(cat .agent-sdk/token).
func shellValue(t *testing.T, dir string, env []string, v string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", `v=`+v+`; printf %s "$v"`)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sh: %s: %v", v, err)
	}
	return string(out)
}

// readmeServe is a serve command running in the background.
type readmeServe struct {
	cmd  *exec.Cmd
	done chan struct{}
	once sync.Once
}

// stop kills the command and what it started (go run's program, the
// CLI's agent binary): its process group.
func (s *readmeServe) stop() {
	s.once.Do(func() {
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	})
}

// startReadmeServe starts a serve command and waits until it serves.
func startReadmeServe(t *testing.T, dir string, env []string, c readmeCommand, text string) *readmeServe {
	t.Helper()
	cmd := exec.Command("sh", "-c", "exec "+text)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &readmeServe{cmd: cmd, done: make(chan struct{})}
	serving := make(chan struct{})
	var (
		mu  sync.Mutex
		log bytes.Buffer
	)
	go func() {
		sc := bufio.NewScanner(pipe)
		said := false
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if !said && strings.HasPrefix(sc.Text(), "serving ") {
				said = true
				close(serving)
			}
		}
		cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			mu.Lock()
			t.Logf("README.md:%d: %s wrote:\n%s", c.line, text, log.String())
			mu.Unlock()
		}
	})
	select {
	case <-serving:
	case <-s.done:
		t.Fatalf("README.md:%d: %s exited before serving:\n%s", c.line, text, log.String())
	}
	return s
}

// matchesSample reports whether out is what sample shows, … standing for
// any text and durationMs for any duration.
func matchesSample(out, sample string) bool {
	out = regexp.MustCompile(`"durationMs": \d+`).ReplaceAllString(out, `"durationMs": 0`)
	parts := strings.Split(strings.TrimSpace(sample), "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`^` + strings.Join(parts, `(?s:.*?)`) + `$`).MatchString(strings.TrimSpace(out))
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
