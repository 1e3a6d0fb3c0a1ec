package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// A model turn on the real binary with Gemini configured in agent.yaml,
// its key and base URL from the usual variables, served by the fake's
// Gemini wire; and the agent binary links the provider it is built for
// and no other: Gemini's SDK for gemini (agent.yaml, or --model
// gemini/…), none of it for anthropic.
func TestGeminiAgent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gem")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "agent", "agent.yaml"), []byte("model:\n  provider: gemini\n  name: gemini-2.5-flash\nsystem: Be brief.\nmaxSteps: 4\n"), 0o644)
	fake := fakemodel.New(
		fakemodel.Reply{Calls: []fakemodel.Call{{Name: "hello", Input: `{"name":"Ada"}`}}},
		fakemodel.Reply{Text: []string{"Said ", "hello."}},
	)
	defer fake.Close()
	env := []string{"GOOGLE_GEMINI_BASE_URL=" + fake.GeminiURL(), "GEMINI_API_KEY=test-key", "GOOGLE_API_KEY="}
	s := startServerEnv(t, dir, env)
	r := run(t, dir, "", "send", "new", "Say hello to Ada", "--url", strings.TrimSuffix(s.base, "/v1"), "--follow")
	if r.code != 0 || !strings.Contains(r.stdout, "\n✓ hello ") || !strings.Contains(r.stdout, "\nSaid hello.\n") || !strings.Contains(r.stdout, "── turn completed") {
		t.Fatalf("send --follow: %+v\n%s", r, s.logs())
	}
	if !fake.Contains(0, `"systemInstruction":{"parts":[{"text":"Be brief."}]`) || !fake.Contains(1, `"functionResponse"`) || !fake.Contains(1, "Hello, Ada!") {
		t.Errorf("the model did not get the system prompt or the tool result:\n%s", fake.Requests()[1])
	}

	// links returns the modules the binary built with these arguments links.
	links := func(args ...string) (bin, modules string) {
		t.Helper()
		r := run(t, dir, "", append([]string{"build", "--dir", "."}, args...)...)
		if r.code != 0 {
			t.Fatalf("build %v: %+v", args, r)
		}
		bin = strings.TrimSpace(r.stdout)
		out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
		if err != nil {
			t.Fatalf("go version -m: %v\n%s", err, out)
		}
		return bin, string(out)
	}
	const genai, anthropic, openai = "google.golang.org/genai", "github.com/anthropics/anthropic-sdk-go", "github.com/openai/openai-go"
	bin, mods := links()
	if !strings.Contains(mods, genai) || strings.Contains(mods, anthropic) || strings.Contains(mods, openai) {
		t.Errorf("the gemini agent links:\n%s", mods)
	}
	if again, _ := links("--model", "gemini/gemini-2.5-flash"); again != bin {
		t.Errorf("--model gemini/gemini-2.5-flash built %s, not the agent.yaml's %s", again, bin)
	}
	if _, mods := links("--model", "anthropic/claude-sonnet-4-5"); strings.Contains(mods, genai) || !strings.Contains(mods, anthropic) {
		t.Errorf("the anthropic agent links:\n%s", mods)
	}
}
