package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/gemini"
)

// open returns a provider talking to a fake Gemini API answering script.
func open(t *testing.T, cfg model.Config, script ...fakemodel.Reply) (model.Provider, *fakemodel.Server) {
	t.Helper()
	fake := fakemodel.New(script...)
	t.Cleanup(fake.Close)
	if cfg.Name == "" {
		cfg.Name = "gemini-2.5-flash"
	}
	if cfg.APIKey == "" {
		cfg.APIKey = "test-key"
	}
	cfg.BaseURL = fake.GeminiURL()
	p, err := gemini.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, fake
}

// collect streams req and returns its chunks and the error it ended with.
func collect(ctx context.Context, p model.Provider, req *model.Request) ([]model.Chunk, error) {
	var chunks []model.Chunk
	for c, err := range p.Stream(ctx, req) {
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, c)
	}
	return chunks, nil
}

// answer is what a stream said, put together.
type answer struct {
	text, reasoning string
	blocks          []model.Reasoning
	calls           []model.ToolCall
	end             *model.End
}

func assemble(t *testing.T, chunks []model.Chunk) answer {
	t.Helper()
	var a answer
	for i, c := range chunks {
		a.text += c.Text
		a.reasoning += c.ReasoningText
		if c.Reasoning != nil {
			a.blocks = append(a.blocks, *c.Reasoning)
		}
		if c.ToolCall != nil {
			a.calls = append(a.calls, *c.ToolCall)
		}
		if c.End != nil {
			if i != len(chunks)-1 {
				t.Errorf("the end came as chunk %d of %d", i+1, len(chunks))
			}
			a.end = c.End
		}
	}
	if a.end == nil {
		t.Errorf("the stream had no end: %+v", chunks)
	}
	return a
}

// body decodes the n-th request the fake got.
func body(t *testing.T, fake *fakemodel.Server, n int) map[string]any {
	t.Helper()
	reqs := fake.Requests()
	if n >= len(reqs) {
		t.Fatalf("the fake got %d requests, want at least %d", len(reqs), n+1)
	}
	var v map[string]any
	if err := json.Unmarshal(reqs[n], &v); err != nil {
		t.Fatalf("decoding request %d: %v", n, err)
	}
	return v
}

// at walks a decoded JSON value by keys and indexes.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// decoded is s decoded, for comparing JSON values with jsonOf.
func decoded(s string) any {
	var v any
	json.Unmarshal([]byte(s), &v)
	return v
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestStreamText(t *testing.T) {
	t.Parallel()
	p, fake := open(t, model.Config{MaxTokens: 321}, fakemodel.Reply{Text: []string{"Hello, ", "world."}})
	schema := `{"type":"object","properties":{"city":{"type":"string","minLength":1}},"required":["city"],"additionalProperties":false}`
	req := &model.Request{
		System:   "Be brief.",
		Messages: []model.Message{{Role: model.User, Text: "Hi"}},
		Tools:    []model.Tool{{Name: "weather", Description: "Weather in a city.", InputSchema: json.RawMessage(schema)}},
	}
	chunks, err := collect(context.Background(), p, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 3 || chunks[0].Text != "Hello, " || chunks[1].Text != "world." {
		t.Errorf("chunks: %+v", chunks)
	}
	a := assemble(t, chunks)
	want := model.End{Model: "gemini-2.5-flash", StopReason: "STOP", Usage: &model.Usage{InputTokens: 10, OutputTokens: 5}}
	if a.end != nil && (a.end.Model != want.Model || a.end.StopReason != want.StopReason || *a.end.Usage != *want.Usage) {
		t.Errorf("end: %+v %+v, want %+v %+v", a.end, a.end.Usage, want, want.Usage)
	}
	b := body(t, fake, 0)
	for _, check := range []struct {
		name string
		got  any
		want string
	}{
		{"systemInstruction", at(b, "systemInstruction", "parts", 0, "text"), `"Be brief."`},
		{"contents", at(b, "contents"), `[{"parts":[{"text":"Hi"}],"role":"user"}]`},
		{"maxOutputTokens", at(b, "generationConfig", "maxOutputTokens"), `321`},
		{"the schema, unchanged", at(b, "tools", 0, "functionDeclarations", 0, "parametersJsonSchema"), jsonOf(decoded(schema))},
		{"the tool's name", at(b, "tools", 0, "functionDeclarations", 0, "name"), `"weather"`},
		{"no thinking unless asked", at(b, "generationConfig", "thinkingConfig"), `null`},
	} {
		if got := jsonOf(check.got); got != check.want {
			t.Errorf("%s: %s, want %s", check.name, got, check.want)
		}
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		usage fakemodel.GeminiUsage
		want  model.Usage
	}{
		{"no cache, no thoughts", fakemodel.GeminiUsage{PromptTokenCount: 120, CandidatesTokenCount: 30},
			model.Usage{InputTokens: 120, OutputTokens: 30}},
		{"cached input is not full-price input", fakemodel.GeminiUsage{PromptTokenCount: 1200, CachedContentTokenCount: 1000, CandidatesTokenCount: 30},
			model.Usage{InputTokens: 200, CacheReadTokens: 1000, OutputTokens: 30}},
		{"thoughts are output", fakemodel.GeminiUsage{PromptTokenCount: 1200, CachedContentTokenCount: 1000, CandidatesTokenCount: 30, ThoughtsTokenCount: 70},
			model.Usage{InputTokens: 200, CacheReadTokens: 1000, OutputTokens: 100, ReasoningTokens: 70}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, _ := open(t, model.Config{}, fakemodel.Reply{Text: []string{"a", "b"}, GeminiUsage: &tt.usage})
			chunks, err := collect(context.Background(), p, &model.Request{Messages: []model.Message{{Role: model.User, Text: "hi"}}})
			if err != nil {
				t.Fatal(err)
			}
			// Every chunk of the stream reported usage so far; the last
			// one counts, not their sum.
			if a := assemble(t, chunks); a.end != nil && (a.end.Usage == nil || *a.end.Usage != tt.want) {
				t.Errorf("usage %+v, want %+v", a.end.Usage, tt.want)
			}
		})
	}
}

// A tool call's thought signature comes back on its functionCall part in
// the next request, and Gemini 3 (the fake, for a gemini-3 model) refuses
// the request without it.
func TestThoughtSignatures(t *testing.T) {
	t.Parallel()
	p, fake := open(t, model.Config{Name: "gemini-3-flash-preview", Thinking: &model.Thinking{BudgetTokens: 1024}},
		fakemodel.Reply{Thoughts: []string{"Two cities, ", "two calls."}, Text: []string{"Checking."}, Calls: []fakemodel.Call{
			{Name: "weather", Input: `{"city":"Oslo"}`},
			{Name: "weather", Input: `{"city":"Lima","days":2}`},
		}},
		fakemodel.Reply{Text: []string{"Clear in both."}},
		fakemodel.Reply{Text: []string{"refused before this"}},
	)
	ctx := context.Background()
	history := []model.Message{{Role: model.User, Text: "Weather in Oslo and Lima?"}}
	chunks, err := collect(ctx, p, &model.Request{Messages: history})
	if err != nil {
		t.Fatal(err)
	}
	a := assemble(t, chunks)
	if a.reasoning != "Two cities, two calls." || a.text != "Checking." {
		t.Errorf("reasoning %q, text %q", a.reasoning, a.text)
	}
	if len(a.calls) != 2 || a.calls[0].Name != "weather" || string(a.calls[1].Input) != `{"city":"Lima","days":2}` {
		t.Fatalf("calls: %+v", a.calls)
	}
	if a.calls[0].ID == "" || a.calls[0].ID == a.calls[1].ID {
		t.Errorf("call ids %q and %q: want two, different", a.calls[0].ID, a.calls[1].ID)
	}
	// The thought, shown and unsigned; the first call's signature.
	if len(a.blocks) != 2 || a.blocks[0].Text != "Two cities, two calls." || a.blocks[0].Signature != "" ||
		a.blocks[1].Text != "" || !strings.HasPrefix(a.blocks[1].Signature, "gemini:call:"+a.calls[0].ID+":") {
		t.Errorf("reasoning blocks: %+v", a.blocks)
	}
	if b := body(t, fake, 0); jsonOf(at(b, "generationConfig", "thinkingConfig")) != `{"includeThoughts":true,"thinkingBudget":1024}` {
		t.Errorf("thinkingConfig: %s", jsonOf(at(b, "generationConfig", "thinkingConfig")))
	}

	results := model.Message{Role: model.User, ToolResults: []model.ToolResult{
		{CallID: a.calls[0].ID, Content: `{"sky":"clear"}`},
		{CallID: a.calls[1].ID, Content: "the weather service is down", IsError: true},
	}}
	full := append(history, model.Message{Role: model.Assistant, Text: a.text, Reasoning: a.blocks, ToolCalls: a.calls}, results)
	chunks, err = collect(ctx, p, &model.Request{Messages: full})
	if err != nil {
		t.Fatalf("the next request, with the signature: %v", err)
	}
	if a := assemble(t, chunks); a.text != "Clear in both." {
		t.Errorf("answer: %q", a.text)
	}
	b := body(t, fake, 1)
	sent := at(b, "contents", 1, "parts")
	sig := strings.TrimPrefix(a.blocks[1].Signature, "gemini:call:"+a.calls[0].ID+":")
	if got := jsonOf(sent); got != `[{"text":"Checking."},`+
		`{"functionCall":{"args":{"city":"Oslo"},"name":"weather"},"thoughtSignature":"`+sig+`"},`+
		`{"functionCall":{"args":{"city":"Lima","days":2},"name":"weather"}}]` {
		t.Errorf("the model's content sent back (the unsigned thought is not, nor ids Gemini never gave):\n%s", got)
	}
	if got := jsonOf(at(b, "contents", 2)); got != `{"parts":[`+
		`{"functionResponse":{"name":"weather","response":{"output":"{\"sky\":\"clear\"}"}}},`+
		`{"functionResponse":{"name":"weather","response":{"error":"the weather service is down"}}}],"role":"user"}` {
		t.Errorf("the results:\n%s", got)
	}

	// Without the signature, Gemini 3 refuses.
	full[1].Reasoning = nil
	_, err = collect(ctx, p, &model.Request{Messages: full})
	if e, ok := errors.AsType[*model.Error](err); !ok || e.Reason != model.ReasonInvalidRequest || e.Status != 400 ||
		!strings.Contains(e.Message, "missing a thought_signature") {
		t.Errorf("a request without the signature: %v", err)
	}
}

// An answer with thoughts and no calls ends with the text's signature,
// which goes back on the text part.
func TestTextSignature(t *testing.T) {
	t.Parallel()
	p, fake := open(t, model.Config{Thinking: &model.Thinking{BudgetTokens: 512}},
		fakemodel.Reply{Thoughts: []string{"Easy."}, Text: []string{"Four."}}, fakemodel.Reply{Text: []string{"ok"}})
	history := []model.Message{{Role: model.User, Text: "2+2?"}}
	chunks, err := collect(context.Background(), p, &model.Request{Messages: history})
	if err != nil {
		t.Fatal(err)
	}
	a := assemble(t, chunks)
	if len(a.blocks) != 2 || a.blocks[0].Text != "Easy." || !strings.HasPrefix(a.blocks[1].Signature, "gemini:text:") {
		t.Fatalf("blocks: %+v", a.blocks)
	}
	history = append(history, model.Message{Role: model.Assistant, Text: a.text, Reasoning: a.blocks}, model.Message{Role: model.User, Text: "and 3+3?"})
	if _, err := collect(context.Background(), p, &model.Request{Messages: history}); err != nil {
		t.Fatal(err)
	}
	want := `{"text":"Four.","thoughtSignature":"` + strings.TrimPrefix(a.blocks[1].Signature, "gemini:text:") + `"}`
	if got := jsonOf(at(body(t, fake, 1), "contents", 1, "parts")); got != "["+want+"]" {
		t.Errorf("the model's content sent back: %s, want [%s]", got, want)
	}
}

// The images of a tool result reach Gemini as inlineData parts beside the
// function responses.
func TestImageResult(t *testing.T) {
	t.Parallel()
	p, fake := open(t, model.Config{})
	png := []byte("\x89PNG\r\n\x1a\nfake")
	msgs := []model.Message{
		{Role: model.User, Text: "Screenshot the page."},
		{Role: model.Assistant, ToolCalls: []model.ToolCall{{ID: "call-1", Name: "screenshot", Input: json.RawMessage(`{}`)}}},
		{Role: model.User, ToolResults: []model.ToolResult{{CallID: "call-1", Content: "one image",
			Images: []model.Image{{MimeType: "image/png", Data: png, Name: "image 1 of the result"}}}}},
	}
	if _, err := collect(context.Background(), p, &model.Request{Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	want := `{"parts":[{"functionResponse":{"id":"call-1","name":"screenshot","response":{"output":"one image"}}},` +
		`{"text":"screenshot: image 1 of the result"},` +
		`{"inlineData":{"data":"iVBORw0KGgpmYWtl","mimeType":"image/png"}}],"role":"user"}`
	if got := jsonOf(at(body(t, fake, 0), "contents", 2)); got != want {
		t.Errorf("the result's content:\n%s\nwant:\n%s", got, want)
	}
}

// Every failure is a *model.Error with the status, Gemini's message, and
// the wait it asked for.
func TestErrors(t *testing.T) {
	t.Parallel()
	tooLong := "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576)."
	tests := []struct {
		name       string
		key        string
		reply      fakemodel.Reply
		reason     model.Reason
		status     int
		message    string
		retryAfter time.Duration
	}{
		{"rate limited, with RetryInfo", "", fakemodel.Reply{Status: 429, GeminiError: &fakemodel.GeminiError{
			Message: "You exceeded your current quota.", RetryDelay: 1500 * time.Millisecond}},
			model.ReasonRateLimited, 429, "You exceeded your current quota.", 1500 * time.Millisecond},
		{"rate limited, no wait given", "", fakemodel.Reply{Status: 429}, model.ReasonRateLimited, 429, "fake failure 429", 0},
		{"unauthenticated", "", fakemodel.Reply{Status: 401}, model.ReasonAuth, 401, "fake failure 401", 0},
		{"permission denied", "", fakemodel.Reply{Status: 403}, model.ReasonAuth, 403, "fake failure 403", 0},
		{"a wrong key (400 API_KEY_INVALID)", fakemodel.GeminiInvalidKey, fakemodel.Reply{}, model.ReasonAuth, 400, "API key not valid. Please pass a valid API key.", 0},
		{"context length", "", fakemodel.Reply{Status: 400, GeminiError: &fakemodel.GeminiError{Message: tooLong}},
			model.ReasonContextLength, 400, tooLong, 0},
		{"invalid argument", "", fakemodel.Reply{Status: 400, GeminiError: &fakemodel.GeminiError{Message: "* GenerateContentRequest.contents: contents is not specified"}},
			model.ReasonInvalidRequest, 400, "* GenerateContentRequest.contents: contents is not specified", 0},
		{"unavailable", "", fakemodel.Reply{Status: 503, GeminiError: &fakemodel.GeminiError{Message: "The model is overloaded. Please try again later."}},
			model.ReasonOverloaded, 503, "The model is overloaded. Please try again later.", 0},
		{"internal, in the stream", "", fakemodel.Reply{Text: []string{"par"}, Status: 500, GeminiError: &fakemodel.GeminiError{InStream: true}},
			model.ReasonOverloaded, 500, "fake failure 500", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, _ := open(t, model.Config{APIKey: tt.key}, tt.reply)
			_, err := collect(context.Background(), p, &model.Request{Messages: []model.Message{{Role: model.User, Text: "hi"}}})
			e, ok := errors.AsType[*model.Error](err)
			if !ok {
				t.Fatalf("error %v (%T), want a *model.Error", err, err)
			}
			if e.Reason != tt.reason || e.Status != tt.status || e.Message != tt.message || e.RetryAfter != tt.retryAfter {
				t.Errorf("error %+v,\nwant reason %s, status %d, message %q, retry after %s", e, tt.reason, tt.status, tt.message, tt.retryAfter)
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		p, _ := open(t, model.Config{}, fakemodel.Reply{Hang: time.Minute})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := collect(ctx, p, &model.Request{Messages: []model.Message{{Role: model.User, Text: "hi"}}})
		if e, ok := errors.AsType[*model.Error](err); !ok || e.Reason != model.ReasonTimeout || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %v, want a timeout", err)
		}
	})
}

// The key and the base URL come from the configuration, else the usual
// variables; GOOGLE_GENAI_USE_VERTEXAI does not turn the provider into a
// Vertex AI client.
func TestEnvironment(t *testing.T) {
	fake := fakemodel.New()
	t.Cleanup(fake.Close)
	tests := []struct {
		name string
		cfg  model.Config
		env  map[string]string
		err  string // a substring of New's error; "" for none
	}{
		{"the configured key wins", model.Config{APIKey: "k"}, map[string]string{"GEMINI_API_KEY": fakemodel.GeminiInvalidKey}, ""},
		{"GEMINI_API_KEY before GOOGLE_API_KEY", model.Config{}, map[string]string{"GEMINI_API_KEY": "k", "GOOGLE_API_KEY": fakemodel.GeminiInvalidKey}, ""},
		{"GOOGLE_API_KEY alone", model.Config{}, map[string]string{"GOOGLE_API_KEY": "k"}, ""},
		{"the Gemini API, whatever GOOGLE_GENAI_USE_VERTEXAI says", model.Config{APIKey: "k"}, map[string]string{"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "us-central1"}, ""},
		{"no key", model.Config{}, nil, "set GEMINI_API_KEY"},
		{"no name", model.Config{Name: "-"}, map[string]string{"GEMINI_API_KEY": "k"}, "model.name is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { // not parallel: t.Setenv
			for _, v := range []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"} {
				t.Setenv(v, tt.env[v])
			}
			t.Setenv("GOOGLE_GEMINI_BASE_URL", fake.GeminiURL())
			cfg := tt.cfg
			switch cfg.Name {
			case "":
				cfg.Name = "gemini-2.5-flash"
			case "-":
				cfg.Name = ""
			}
			p, err := gemini.New(cfg)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("New: %v, want an error with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := collect(context.Background(), p, &model.Request{Messages: []model.Message{{Role: model.User, Text: "hi"}}}); err != nil {
				t.Errorf("streaming: %v", err)
			}
		})
	}
}
