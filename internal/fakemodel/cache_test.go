package fakemodel_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// long is a text block of about 1,800 tokens: a prefix the cache takes.
var long = map[string]any{"type": "text", "text": strings.Repeat("lorem ipsum ", 600)}

// marked is b with a breakpoint.
func marked(b map[string]any) map[string]any {
	m := map[string]any{"cache_control": map[string]any{"type": "ephemeral"}}
	for k, v := range b {
		m[k] = v
	}
	return m
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// texts is n short text blocks.
func texts(n int) []any {
	var out []any
	for i := range n {
		out = append(out, text(fmt.Sprintf("block %d", i)))
	}
	return out
}

// post sends a Messages API request of these messages (role, then
// content, in turn) and returns the answer's status and body.
func post(t *testing.T, fake *fakemodel.Server, modelName string, msgs ...any) (int, string) {
	t.Helper()
	var messages []any
	for i := 0; i < len(msgs); i += 2 {
		messages = append(messages, map[string]any{"role": msgs[i], "content": msgs[i+1]})
	}
	body, _ := json.Marshal(map[string]any{"model": modelName, "max_tokens": 100, "stream": true, "messages": messages})
	resp, err := http.Post(fake.AnthropicURL()+"/v1/messages", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAnthropicCache: the fake reads back a prefix that an earlier
// request wrote at a breakpoint, found from a breakpoint at most 20 blocks
// after it, as the API documents; keyed by the model; never under 1,024
// tokens; and a reply's scripted usage wins.
func TestAnthropicCache(t *testing.T) {
	t.Parallel()
	first := []any{"user", []any{marked(long)}}
	unmarked := []any{"user", []any{long}} // the same prefix, its breakpoint moved on
	tests := []struct {
		name  string
		model string
		msgs  []any
		reply fakemodel.Reply
		read  bool
		write bool
		usage *fakemodel.Usage
	}{
		{"within the lookback", "m", append(unmarked, "assistant", texts(10), "user", []any{marked(text("next"))}), fakemodel.Reply{}, true, true, nil},
		{"beyond the lookback", "m", append(unmarked, "assistant", texts(25), "user", []any{marked(text("next"))}), fakemodel.Reply{}, false, true, nil},
		{"beyond, with the old breakpoint kept", "m", append(first, "assistant", texts(25), "user", []any{marked(text("next"))}), fakemodel.Reply{}, true, true, nil},
		{"another model", "n", append(first, "assistant", texts(1), "user", []any{marked(text("next"))}), fakemodel.Reply{}, false, true, nil},
		{"unmarked", "m", append(first, "assistant", texts(1), "user", []any{text("next")}), fakemodel.Reply{}, true, false, nil},
		{"too short to cache", "m", []any{"user", []any{marked(text("short"))}}, fakemodel.Reply{}, false, false, nil},
		{"scripted usage", "m", append(first, "assistant", texts(1), "user", []any{marked(text("next"))}),
			fakemodel.Reply{Usage: &fakemodel.Usage{Input: 7, Output: 3}}, false, false, &fakemodel.Usage{Input: 7, Output: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := fakemodel.New()
			t.Cleanup(fake.Close)
			if status, body := post(t, fake, "m", first...); status != 200 {
				t.Fatalf("the first request: %d %s", status, body)
			}
			fake.Push(tt.reply)
			if status, body := post(t, fake, tt.model, tt.msgs...); status != 200 {
				t.Fatalf("%d %s", status, body)
			}
			us := fake.Usages()
			wrote, u := us[0], us[1]
			if wrote.CacheWrite == 0 || wrote.CacheRead != 0 {
				t.Fatalf("the first request: %+v, want a write", wrote)
			}
			if tt.usage != nil {
				if u != *tt.usage {
					t.Errorf("usage %+v, want the scripted %+v", u, *tt.usage)
				}
				return
			}
			if tt.read && u.CacheRead != wrote.CacheWrite || !tt.read && u.CacheRead != 0 || tt.write != (u.CacheWrite > 0) {
				t.Errorf("usage %+v, want a read of %d: %v, a write: %v", u, wrote.CacheWrite, tt.read, tt.write)
			}
			if got, want := u.Input+u.CacheRead+u.CacheWrite, fakemodel.Tokens(fake.Requests()[1]); got != want {
				t.Errorf("the prompt is %d tokens, want %d", got, want)
			}
		})
	}
}

// TestAnthropicBreakpointRefusals: what the API refuses of breakpoints.
func TestAnthropicBreakpointRefusals(t *testing.T) {
	t.Parallel()
	fake := fakemodel.New()
	t.Cleanup(fake.Close)
	five := []any{marked(text("1")), marked(text("2")), marked(text("3")), marked(text("4")), marked(text("5"))}
	thinking := marked(map[string]any{"type": "thinking", "thinking": "hm", "signature": "sig"})
	tests := []struct {
		name string
		msgs []any
		says string
	}{
		{"five breakpoints", []any{"user", five}, "A maximum of 4 blocks with cache_control may be provided. Found 5."},
		{"on a thinking block", []any{"user", []any{text("hi")}, "assistant", []any{thinking, text("ok")}, "user", []any{text("and?")}},
			"messages.1.content.0.thinking.cache_control: Extra inputs are not permitted"},
	}
	for _, tt := range tests {
		status, body := post(t, fake, "m", tt.msgs...)
		if status != 400 || !strings.Contains(body, `"type":"invalid_request_error"`) || !strings.Contains(body, tt.says) {
			t.Errorf("%s: %d %s, want 400 saying %q", tt.name, status, body, tt.says)
		}
	}
}

// TestWindow: a request over the window is refused as the API refuses it,
// and takes no scripted reply.
func TestWindow(t *testing.T) {
	t.Parallel()
	fake := fakemodel.New(fakemodel.Reply{Text: []string{"fits"}})
	t.Cleanup(fake.Close)
	fake.SetWindow(1000)
	status, body := post(t, fake, "m", "user", []any{long})
	n := fakemodel.Tokens(fake.Requests()[0])
	if want := fmt.Sprintf("prompt is too long: %d tokens > 1000 maximum", n); status != 400 || !strings.Contains(body, want) {
		t.Errorf("%d %s, want 400 saying %q", status, body, want)
	}
	if status, body := post(t, fake, "m", "user", []any{text("hi")}); status != 200 || !strings.Contains(body, `"text":"fits"`) {
		t.Errorf("the next request: %d %s", status, body)
	}
}
