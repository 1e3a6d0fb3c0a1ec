package openai_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/openai"
)

// long is a text of about 1,800 tokens as the fake counts them: over the
// 1,024 OpenAI caches at least.
var long = strings.Repeat("lorem ipsum ", 600)

// open returns a provider talking to a new fake.
func open(t *testing.T, script ...fakemodel.Reply) (*fakemodel.Server, model.Provider) {
	t.Helper()
	fake := fakemodel.New(script...)
	t.Cleanup(fake.Close)
	p, err := openai.New(model.Config{Name: "gpt-test", APIKey: "test", BaseURL: fake.OpenAIURL()})
	if err != nil {
		t.Fatal(err)
	}
	return fake, p
}

// usage streams req through p and returns the answer's usage, or the
// error.
func usage(p model.Provider, req *model.Request) (model.Usage, error) {
	var u model.Usage
	for c, err := range p.Stream(context.Background(), req) {
		if err != nil {
			return u, err
		}
		if c.End != nil && c.End.Usage != nil {
			u = *c.End.Usage
		}
	}
	return u, nil
}

// TestPromptCacheKey: the session's id goes as prompt_cache_key, and the
// fake (as OpenAI) reads a prefix a request of the same key sent, in steps
// of 128 tokens past the first 1,024.
func TestPromptCacheKey(t *testing.T) {
	t.Parallel()
	fake, p := open(t)
	first := []model.Message{{Role: model.User, Text: long}}
	next := append(first, model.Message{Role: model.Assistant, Text: "Noted."}, model.Message{Role: model.User, Text: "Go on."})
	requests := []struct {
		name     string
		key      string
		messages []model.Message
		cached   bool
	}{
		{"the first", "sess_1", first, false},
		{"the next, same key", "sess_1", next, true},
		{"another session", "sess_2", next, false},
		{"no key", "", next, false},
	}
	for i, r := range requests {
		u, err := usage(p, &model.Request{Messages: r.messages, CacheKey: r.key})
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		sent := fake.Contains(i, `"prompt_cache_key":"`+r.key+`"`)
		if r.key != "" && !sent || r.key == "" && fake.Contains(i, `"prompt_cache_key"`) {
			t.Errorf("%s: the request's prompt_cache_key is not %q: %s", r.name, r.key, fake.Requests()[i])
		}
		if got, want := u.PromptTokens(), fakemodel.Tokens(fake.Requests()[i]); got != want {
			t.Errorf("%s: prompt tokens %d, want the fake's count %d", r.name, got, want)
		}
		if c := u.CacheReadTokens; r.cached != (c > 0) || c > 0 && (c < 1024 || (c-1024)%128 != 0) {
			t.Errorf("%s: %d tokens read from the cache (%+v), want some: %v, 1,024 and steps of 128", r.name, c, u, r.cached)
		}
	}
}

// TestCacheKeyHosts: only OpenAI is sent prompt_cache_key; compatible
// servers that do not know it refuse it.
func TestCacheKeyHosts(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	for url, want := range map[string]bool{
		"":                               true,
		"https://api.openai.com/v1":      true,
		"http://localhost:11434/v1":      false,
		"https://api.groq.com/openai/v1": false,
		"https://api.cerebras.ai/v1":     false,
	} {
		if got := openai.TakesCacheKey(url); got != want {
			t.Errorf("%q: sent the key %v, want %v", url, got, want)
		}
	}
	t.Setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
	if openai.TakesCacheKey("") {
		t.Error("OPENAI_BASE_URL names vLLM, and it is sent the key")
	}
}

// TestContextLength: a request over the fake's window gets OpenAI's
// error, which the provider classifies; the script's reply waits for the
// next request.
func TestContextLength(t *testing.T) {
	t.Parallel()
	fake, p := open(t, fakemodel.Reply{Text: []string{"short enough"}})
	fake.SetWindow(1000)
	_, err := usage(p, &model.Request{Messages: []model.Message{{Role: model.User, Text: long}}})
	var merr *model.Error
	if !errors.As(err, &merr) || merr.Reason != model.ReasonContextLength || merr.Status != 400 ||
		!strings.HasPrefix(merr.Message, "This model's maximum context length is 1000 tokens. However, your messages resulted in ") {
		t.Fatalf("%v, want context_length_exceeded saying the maximum", err)
	}
	var text string
	for c, err := range p.Stream(context.Background(), &model.Request{Messages: []model.Message{{Role: model.User, Text: "hi"}}}) {
		if err != nil {
			t.Fatalf("the next request: %v", err)
		}
		text += c.Text
	}
	if text != "short enough" {
		t.Errorf("the next request was answered %q", text)
	}
}
