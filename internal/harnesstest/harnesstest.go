// Package harnesstest gives tests the real coding-agent harnesses from npm
// (installed once into the npm test cache, see internal/npmtest), set up to
// run against a fake provider (internal/fakemodel): Claude Code against
// its Anthropic Messages wire, Codex against OpenAI Responses, Gemini CLI
// against generateContent.
package harnesstest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/internal/npmtest"
)

// The versions tested.
const (
	ClaudeVersion = "0.23.1" // @zed-industries/claude-agent-acp (Claude Code 2.1.83)
	CodexVersion  = "0.16.0" // @zed-industries/codex-acp
	GeminiVersion = "0.61.0" // @google/gemini-cli
)

// Claude returns the spec of Claude Code's ACP adapter talking to fake. It
// skips t without npm (fails it under CI=true).
func Claude(t testing.TB, fake *fakemodel.Server) harness.Spec {
	t.Helper()
	pkg := npmtest.Install(t, harness.Packages[harness.ClaudeCode].Package, ClaudeVersion)
	return harness.Spec{Name: harness.ClaudeCode, Command: pkg.Bin("claude-agent-acp"),
		Env: map[string]string{"ANTHROPIC_BASE_URL": fake.AnthropicURL(), "ANTHROPIC_API_KEY": "test-key"}}
}

// Codex returns the spec of Codex's ACP adapter talking to fake's OpenAI
// Responses wire.
func Codex(t testing.TB, fake *fakemodel.Server) harness.Spec {
	t.Helper()
	pkg := npmtest.Install(t, harness.Packages[harness.Codex].Package, CodexVersion)
	return harness.Spec{Name: harness.Codex, Command: pkg.Bin("codex-acp"),
		Env: map[string]string{"OPENAI_BASE_URL": fake.OpenAIURL(), "OPENAI_API_KEY": "test-key"}}
}

// Gemini returns the spec of Gemini CLI in ACP mode talking to fake.
func Gemini(t testing.TB, fake *fakemodel.Server) harness.Spec {
	t.Helper()
	pkg := npmtest.Install(t, harness.Packages[harness.Gemini].Package, GeminiVersion)
	return harness.Spec{Name: harness.Gemini, Command: pkg.Bin("gemini"), Args: []string{"--acp"},
		Env: map[string]string{"GOOGLE_GEMINI_BASE_URL": fake.URL, "GEMINI_API_KEY": "test-key"}}
}

// Procs are the processes whose HOME match accepts: a harness and
// everything it started (they inherit its HOME).
func Procs(match func(home string) bool) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			if home, ok := strings.CutPrefix(kv, "HOME="); ok && match(home) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// RSS is the resident memory of the processes, in MB.
func RSS(pids []int) float64 {
	var kb float64
	for _, pid := range pids {
		status, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				f, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				kb += f
			}
		}
	}
	return kb / 1024
}
