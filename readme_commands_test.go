package agentsdk_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

	"github.com/agentsdk/agentsdk/client"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/npmtest"
)

// readmeCommand is one command of README.md's ```sh blocks, or one
// line of a ```console block's transcript that begins with "$ ".
type readmeCommand struct {
	line    int    // README.md's line where it begins
	block   int    // the line of its block
	text    string // its lines, continuations joined
	sample  string // what it prints, … standing for anything: the "# " lines right after it, or a transcript's lines up to the next "$ "
	console bool   // from a transcript
}

// readmeCommands are the commands of readme's ```sh and ```console
// blocks, in order.
func readmeCommands(readme string) []readmeCommand {
	var (
		cmds  []readmeCommand
		kind  string // the open block's: sh or console; "" outside one
		block int
		cur   *readmeCommand
	)
	lines := strings.Split(readme, "\n")
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		switch {
		case kind == "" && (trimmed == "```sh" || trimmed == "```console"):
			kind, block, cur = strings.TrimPrefix(trimmed, "```"), i+1, nil
			continue
		case kind == "":
			continue
		case trimmed == "```":
			kind = ""
			continue
		}
		switch {
		case cur != nil && strings.HasSuffix(cur.text, "\\"):
			cur.text = strings.TrimSuffix(cur.text, "\\") + " " + trimmed
		case kind == "console" && strings.HasPrefix(trimmed, "$ "):
			cmds = append(cmds, readmeCommand{line: i + 1, block: block, text: strings.TrimPrefix(trimmed, "$ "), console: true})
			cur = &cmds[len(cmds)-1]
		case kind == "console":
			if cur != nil {
				cur.sample += trimmed + "\n"
			}
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
	do     string // run, park (park a gated call, then run), follow (run until it printed a turn's end, then interrupt it), cancel (a turn running, then run), parked (run, read the lines of a parked call, approve it as they say), eval (the model answers the eval's case, then run), serve (in the background, until the next serve or the test's end), serve-talk (serve, then a turn through it), check-serve (start, then stop), cd, init, set (VAR=…), npm, skip, skip-block (this and the rest of its block)
	why    string // for skip: why it cannot run here
	// bind is a regexp whose first group, in what the command printed (or
	// a variable set), is what example stands for in the README's later
	// commands and samples: the key a key create made, the call a call
	// parked.
	bind, example string
	// sampleAsIs keeps 127.0.0.1:3000 in the sample: the command prints
	// serve's default address, whatever the test serves at.
	sampleAsIs bool
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
	{prefix: "agent-sdk events sess_…", do: "follow"},
	{prefix: "agent-sdk compact sess_…", do: "run"},
	{prefix: "agent-sdk cancel sess_…", do: "cancel"},
	{prefix: "agent-sdk usage --url", do: "run"},
	{prefix: "agent-sdk approvals --url", do: "run"},
	{prefix: "agent-sdk approve tool_promote_build_…", do: "park"},
	{prefix: "agent-sdk deny tool_promote_build_…", do: "park"},
	{prefix: "agent-sdk call promote_build --url", do: "parked"},
	{prefix: "agent-sdk call promote_build --dir . --no-wait", do: "run", sampleAsIs: true},
	{prefix: "agent-sdk audit export --url", do: "run"},
	{prefix: "agent-sdk audit verify --url", do: "run"},
	{prefix: "agent-sdk audit verify audit.jsonl", do: "run"},
	{prefix: "agent-sdk schedules --url", do: "run"},
	{prefix: "agent-sdk schedules run triage", do: "run"},
	{prefix: "export SLACK_BOT_TOKEN", do: "skip-block", why: "needs a Slack app's secrets"},
	{prefix: "export GITHUB_APP_PRIVATE_KEY", do: "skip-block", why: "needs a GitHub App's private key"},
	{prefix: "agent-sdk eval run evals/weather.yaml", do: "eval", bind: `running eval batch (eval_\w+) `, example: "eval_…"},
	{prefix: "agent-sdk eval list --url", do: "run"},
	{prefix: "agent-sdk eval show eval_…", do: "run"},
	{prefix: "agent-sdk keys create ci-bot", do: "run", bind: `created key (\S+) `, example: "3xkq7ztmhb2ma"},
	{prefix: "agent-sdk keys --url", do: "run"},
	{prefix: "agent-sdk keys revoke", do: "run"},
	{prefix: "ALICE=$(agent-sdk keys create alice", do: "set", bind: `^ask_([a-z0-9]+)_`, example: "5hw2nq8tdk3re"},
	{prefix: "BOB=$(agent-sdk keys create bob", do: "set", bind: `^ask_([a-z0-9]+)_`, example: "9m2c4…"},
	{prefix: "CAROL=$(agent-sdk keys create carol", do: "set", bind: `^ask_([a-z0-9]+)_`, example: "q8w1x…"},
	{prefix: "AGENT_SDK_TOKEN=$ALICE agent-sdk call deploy", do: "run", bind: `call (tool_deploy_\w+) is waiting`, example: "tool_deploy_7f3k"},
	{prefix: "AGENT_SDK_TOKEN=$", do: "run"},
	{prefix: "export AGENT_SDK_STORE='postgres://", do: "skip-block", why: "needs PostgreSQL (cmd/agent-sdk's multihost tests)"},
	{prefix: "mkdir -p /tmp/mcp-inspector/run", do: "run"},
	{prefix: "TOKEN=$(cat .agent-sdk/token)", do: "set"},
	{prefix: "(cd /tmp/mcp-inspector/run && npx", do: "npm"},
}

// readmeInput stands for README's '{…}' inputs.
const readmeInput = `{"prUrl":"https://github.com/acme/checkout/pull/42"}`

// The README's commands work as written: every one of its ```sh blocks'
// commands and its ```console transcripts' "$ " lines runs, in order, as a
// reader runs them — the CLI installed with go install, an agent made
// with init, the tools, schedule and eval the README gives (and those it
// assumes: addReadmeTool) added, served — with what cannot be had offline
// skipped (readmeRules, each with its reason). Substituted: a free port
// for 127.0.0.1:3000, a real session and input for sess_… and '{…}', the
// URL for --url …, what a command made for the README's example of it (a
// key, a call, a batch: commandRule.bind), and a model provider speaking
// Anthropic's API (internal/fakemodel). A command that fails, or prints
// other than the sample under it, fails the test; a transcript's command
// shown failing ("agent-sdk: …") must fail, saying that.
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
	var serving *readmeServe        // the serve command running now
	token := ""                     // its token
	examples := map[string]string{} // a README example → what it stands for here
	actual := func(s string) string {
		for ex, v := range examples {
			s = strings.ReplaceAll(s, ex, v)
		}
		return s
	}
	bind := func(c readmeCommand, rule commandRule, out string) {
		if rule.bind == "" {
			return
		}
		m := regexp.MustCompile(rule.bind).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("README.md:%d: %s printed no %s (for %s):\n%s", c.line, c.text, rule.bind, rule.example, out)
		}
		examples[rule.example] = m[1]
	}

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
		text := strings.ReplaceAll(actual(c.text), "127.0.0.1:3000", addr)
		text = strings.ReplaceAll(text, "--url …", "--url "+url)
		text = strings.ReplaceAll(text, "'{…}'", "'"+readmeInput+"'")
		// What it prints, with what the examples stand for so far (and,
		// once it has run, for those it binds).
		sampleOf := func() string {
			sample := actual(c.sample)
			if !rule.sampleAsIs {
				sample = strings.ReplaceAll(sample, "127.0.0.1:3000", addr)
			}
			return sample
		}
		sample := sampleOf()
		if strings.Contains(text, "sess_…") {
			if session == "" {
				t.Fatalf("README.md:%d: %q needs a session, and none was made before it", c.line, c.text)
			}
			text = strings.ReplaceAll(text, "sess_…", session)
		}
		switch rule.do {
		case "park": // a call of the gated tool for approve and deny to decide
			r := runReadme(t, dir, env, `agent-sdk call promote_build --no-wait --url `+url+` --input '`+promoteInput+`'`)
			var parked struct{ CallID string }
			if err := json.Unmarshal([]byte(r.stdout), &parked); err != nil || parked.CallID == "" {
				t.Fatalf("README.md:%d: parking a call for %s: %v\n%+v", c.line, c.text, err, r)
			}
			text = strings.ReplaceAll(text, "tool_promote_build_…", parked.CallID)
			rule.do = "run"
		case "cancel": // a turn to cancel: the model holds its answer
			waitIdle(t, url, token, session)
			hold := make(chan struct{})
			fake.Push(fakemodel.Reply{Text: []string{"Done at last."}, Until: hold})
			asked := len(fake.Requests())
			send := `agent-sdk send ` + session + ` "Take your time." --url ` + url
			mustRun(t, c, send, runReadme(t, dir, env, send))
			for deadline := time.Now().Add(2 * time.Minute); len(fake.Requests()) == asked; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) { // the turn is in its model call
					t.Fatalf("README.md:%d: the turn %s started did not call the model", c.line, send)
				}
			}
			mustRun(t, c, text, runReadme(t, dir, env, text))
			close(hold)
			waitIdle(t, url, token, session) // the turn ended, cancelled
			continue
		case "eval": // the model of the eval's case: it looks Paris up, then answers
			fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "c1", Name: "lookup", Input: `{"city":"Paris"}`}}},
				fakemodel.Reply{Text: []string{"It is sunny in Paris."}})
			rule.do = "run"
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
			mustRun(t, c, text, runReadme(t, tmp, env, text))
		case "set":
			k, v, _ := strings.Cut(text, "=")
			v = shellValue(t, dir, env, strings.TrimSpace(regexp.MustCompile(`\s#\s.*$`).ReplaceAllString(v, "")))
			bind(c, rule, v)
			setEnv(k, v)
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
			token = strings.TrimSpace(string(tok))
			setEnv("TOKEN", token)
			if rule.do == "serve-talk" { // "talk to it": a turn, recorded or replayed
				talk := `agent-sdk send new "Inspect https://github.com/acme/checkout/pull/42" --url ` + url + ` --follow`
				mustRun(t, c, talk, runReadme(t, dir, env, talk))
			}
		case "npm":
			t.Run(name, func(t *testing.T) {
				npmtest.Install(t, "@modelcontextprotocol/inspector-cli", "1.0.3") // skips (fails under CI=true) without npm and its registry
				r := runReadme(t, dir, env, text)
				mustRun(t, c, text, r)
				if !strings.Contains(r.stdout, `"name": "inspect_pr"`) {
					t.Errorf("README.md:%d: the Inspector listed no inspect_pr:\n%s", c.line, r.stdout)
				}
			})
		case "parked":
			runParked(t, dir, env, c, text, sample)
		case "follow":
			runFollow(t, dir, env, c, text)
		case "run":
			r := runReadme(t, dir, env, text)
			bind(c, rule, r.all())
			sample := sampleOf()
			// A transcript may show a command failing: it must fail, and
			// say what the README shows.
			fails := c.console && strings.HasPrefix(sample, "agent-sdk: ")
			switch {
			case fails && r.code == 0:
				t.Errorf("README.md:%d: %s succeeded; the README shows it failing:\n%s", c.line, c.text, sample)
			case !fails:
				mustRun(t, c, text, r)
			}
			if sample != "" && !r.matches(sample) {
				t.Errorf("README.md:%d: %s printed\n%s\nnot what README shows under it:\n%s", c.line, c.text, r.all(), sample)
			}
			if session == "" {
				session = regexp.MustCompile(`sess_[a-z0-9]+`).FindString(r.stdout)
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

// addReadmeTool adds to the agent in dir what the README's commands
// use: the tool it gives as agent/tools/inspect_pr.go, the deploy tool and
// the triage schedule it gives (with their package clause and imports, and
// what they call), the eval evals/weather.yaml with the tools it names; and
// what it assumes: promote_build, a tool that needs approval for
// production, and an agent.yaml with a model and the role deployer.
func addReadmeTool(t *testing.T, readme, dir string) {
	t.Helper()
	write := func(file, src string) {
		t.Helper()
		path := filepath.Join(dir, filepath.FromSlash(file))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("agent/tools/inspect_pr.go", readmeBlock(t, readme, "`agent/tools/inspect_pr.go`", "```go\n"))
	write("agent/tools/deploy.go", toolHeader+readmeBlock(t, readme, "", "```go\n// agent/tools/deploy.go\n")+deployRest)
	write("agent/schedules/triage.go", scheduleHeader+readmeBlock(t, readme, "**Schedules** live in", "```go\n"))
	write("agent/tools/list_issues.go", listIssuesTool)
	write("agent/tools/promote_build.go", promoteBuildTool)
	write("evals/weather.yaml", readmeBlock(t, readme, "", "```yaml\nname: weather\n"))
	for _, f := range []string{"lookup.go", "judge.go"} { // the tools of cmd/agent-sdk's evals of the same eval
		src, err := os.ReadFile(filepath.Join("cmd", "agent-sdk", "testdata", "evals", f))
		if err != nil {
			t.Fatal(err)
		}
		write("agent/tools/"+f, string(src))
	}
	// The model of the Sessions section, for the turns its commands start;
	// the role of the Approver policies section.
	write("agent/agent.yaml", "model:\n  provider: anthropic\n  name: claude-sonnet-4-5\nauth:\n  roles:\n    deployer: [read, message, call, approve]\n")
}

// readmeBlock returns the content of README's first block that begins with
// open after the text after (the whole README when after is ""), the
// first line of open included unless it is the fence alone.
func readmeBlock(t *testing.T, readme, after, open string) string {
	t.Helper()
	i := strings.Index(readme, after)
	if i < 0 {
		t.Fatalf("README.md no longer has %q", after)
	}
	rest := readme[i:]
	j := strings.Index(rest, open)
	if j < 0 {
		t.Fatalf("README.md has no block %q after %q", open, after)
	}
	fence := open[:strings.Index(open, "\n")+1]
	body := rest[j+len(fence):]
	k := strings.Index(body, "```")
	if k < 0 {
		t.Fatalf("README.md's block %q after %q does not end", open, after)
	}
	return body[:k]
}

// What the README's fragments of Go leave out.
const (
	toolHeader = `package tools

import (
	"context"

	"github.com/agentsdk/agentsdk/tool"
)

`
	deployRest = `
type DeployInput struct {
	Env     string ` + "`json:\"env\"`" + `
	Version string ` + "`json:\"version\"`" + `
}

func deploy(ctx context.Context, call *tool.Call, in DeployInput) (string, error) {
	return "deployed " + in.Version + " to " + in.Env, nil
}
`
	scheduleHeader = `package schedules

import (
	"context"
	"time"

	"github.com/agentsdk/agentsdk/schedule"
	"github.com/agentsdk/agentsdk/tool"
)

`
	listIssuesTool = toolHeader + `type ListIssuesInput struct {
	State string ` + "`json:\"state\"`" + `
}

var _ = tool.Define(tool.Config{Description: "List the repository's issues."}, func(ctx context.Context, call *tool.Call, in ListIssuesInput) ([]string, error) {
	return []string{"#7 the build is slow"}, nil
})
`
	promoteBuildTool = toolHeader + `type PromoteBuildInput struct {
	Service     string ` + "`json:\"service\"`" + `
	Environment string ` + "`json:\"environment\"`" + `
}

var _ = tool.Define(tool.Config{
	Description:   "Promote a service's build to an environment.",
	NeedsApproval: tool.When(func(in PromoteBuildInput) bool { return in.Environment == "production" }),
}, func(ctx context.Context, call *tool.Call, in PromoteBuildInput) (map[string]string, error) {
	return map[string]string{"promoted": in.Service, "to": in.Environment}, nil
})
`
)

// readmeRun is what a command did.
type readmeRun struct {
	stdout, stderr string
	code           int // its exit status; -1 when it could not run
	err            error
}

// all is what the command printed, standard error first.
func (r readmeRun) all() string { return r.stderr + r.stdout }

// matches reports whether what the command printed — on standard output,
// on standard error, or both — is what sample shows.
func (r readmeRun) matches(sample string) bool {
	return matchesSample(r.stdout, sample) || matchesSample(r.stderr, sample) || matchesSample(r.all(), sample)
}

// runReadme runs one command with sh in dir.
func runReadme(t *testing.T, dir string, env []string, text string) readmeRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", text)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		code = -1
		if exit, ok := err.(*exec.ExitError); ok {
			code = exit.ExitCode()
		}
	}
	return readmeRun{stdout.String(), stderr.String(), code, err}
}

// mustRun fails t unless the command succeeded.
func mustRun(t *testing.T, c readmeCommand, text string, r readmeRun) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("README.md:%d: %s\n%v\nstdout:\n%s\nstderr:\n%s", c.line, text, r.err, r.stdout, r.stderr)
	}
}

// waitIdle waits until the session has no running turn.
func waitIdle(t *testing.T, url, token, session string) {
	t.Helper()
	c, err := client.New(url, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		s, err := c.Session(context.Background(), session)
		if err == nil && s.RunningTurn == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s still runs a turn (%v)", session, err)
		}
	}
}

// runFollow runs a command that follows a session's stream until
// interrupted: it must print the end of a turn, and stop on Ctrl-C.
func runFollow(t *testing.T, dir string, env []string, c readmeCommand, text string) {
	t.Helper()
	cmd, sc, stderr := startReadme(t, dir, env, text, false)
	var printed strings.Builder
	for sc.Scan() {
		printed.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "turn completed") {
			break
		}
	}
	if !strings.Contains(printed.String(), "turn completed") {
		t.Fatalf("README.md:%d: %s printed no turn's end:\n%s\nstderr:\n%s", c.line, c.text, printed.String(), stderr.String())
	}
	cmd.Process.Signal(os.Interrupt) // Ctrl-C
	for sc.Scan() {
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("README.md:%d: %s, interrupted: %v\nstderr:\n%s", c.line, c.text, err, stderr.String())
	}
}

// startReadme starts a README command under sh in dir, reading one of
// its outputs line by line (its standard error if fromStderr, else its
// standard output) and keeping the other whole; it is killed when the
// test ends.
func startReadme(t *testing.T, dir string, env []string, text string, fromStderr bool) (*exec.Cmd, *bufio.Scanner, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "exec "+text)
	cmd.Dir, cmd.Env = dir, env
	var kept bytes.Buffer
	var pipe io.ReadCloser
	var err error
	if fromStderr {
		cmd.Stdout = &kept
		pipe, err = cmd.StderrPipe()
	} else {
		cmd.Stderr = &kept
		pipe, err = cmd.StdoutPipe()
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewScanner(pipe), &kept
}

// promoteInput is a call of promote_build that needs approval.
const promoteInput = `{"service":"checkout","environment":"production"}`

// runParked runs a call that parks: it must print, while it waits, the
// lines sample shows; then the approve command they give, run as given,
// lets it finish.
func runParked(t *testing.T, dir string, env []string, c readmeCommand, text, sample string) {
	t.Helper()
	cmd, sc, stdout := startReadme(t, dir, env, text, true)
	var printed []string
	for len(printed) < strings.Count(strings.TrimSpace(sample), "\n")+1 && sc.Scan() {
		printed = append(printed, sc.Text())
	}
	if !matchesSample(strings.Join(printed, "\n"), sample) {
		t.Fatalf("README.md:%d: %s printed\n%s\nnot what README shows under it:\n%s", c.line, c.text, strings.Join(printed, "\n"), sample)
	}
	approve := ""
	for _, l := range printed {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "agent-sdk approve ") {
			approve = l
		}
	}
	if approve == "" {
		t.Fatalf("README.md:%d: %s printed no approve command:\n%s", c.line, c.text, strings.Join(printed, "\n"))
	}
	mustRun(t, c, approve, runReadme(t, dir, env, approve))
	for sc.Scan() {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("README.md:%d: %s, approved as it said: %v\n%s", c.line, c.text, err, stdout.String())
	}
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

// sampleTime is a time in a sample (quoted for a regexp): it stands for
// any time, or "-" for none.
var sampleTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\\\.\d+)?Z`)

// matchesSample reports whether out is what sample shows, … standing for
// any text, durationMs for any duration, a time for any time, and a run of
// spaces (a table's columns) for any.
func matchesSample(out, sample string) bool {
	out = regexp.MustCompile(`"durationMs": \d+`).ReplaceAllString(out, `"durationMs": 0`)
	parts := strings.Split(strings.Join(strings.Fields(sample), " "), "…")
	for i, p := range parts {
		parts[i] = sampleTime.ReplaceAllString(regexp.QuoteMeta(p), `\S+`)
	}
	return regexp.MustCompile(`^` + strings.Join(parts, `(?s:.*?)`) + `$`).MatchString(strings.Join(strings.Fields(out), " "))
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
