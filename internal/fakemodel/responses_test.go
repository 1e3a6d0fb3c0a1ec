package fakemodel_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// responsesClient is the official client pointed at the fake, without
// retries (a scripted error must reach the test).
func responsesClient(fake *fakemodel.Server) openai.Client {
	return openai.NewClient(option.WithBaseURL(fake.OpenAIURL()), option.WithAPIKey("k"), option.WithMaxRetries(0))
}

// streamed is what a Responses stream brought.
type streamed struct {
	types     []string
	text      string // the output_text deltas, joined
	reasoning string // the reasoning_summary_text deltas, joined
	arguments string // the function_call_arguments and custom_tool_call_input deltas, joined
	items     []responses.ResponseOutputItemUnion
	completed *responses.Response
	failed    *responses.Response
}

// stream sends a streamed Responses request whose input is the prompt, or
// the raw input items if given, and reads the whole stream.
func stream(t *testing.T, fake *fakemodel.Server, prompt string, input ...any) (streamed, error) {
	t.Helper()
	params := responses.ResponseNewParams{Model: "gpt-5.4", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}}
	var opts []option.RequestOption
	if len(input) > 0 {
		opts = append(opts, option.WithJSONSet("input", input)) // as Codex sends its history
	}
	client := responsesClient(fake)
	s := client.Responses.NewStreaming(context.Background(), params, opts...)
	defer s.Close()
	var got streamed
	for s.Next() {
		ev := s.Current()
		got.types = append(got.types, ev.Type)
		switch ev.Type {
		case "response.reasoning_summary_text.delta":
			got.reasoning += ev.AsResponseReasoningSummaryTextDelta().Delta
		case "response.output_text.delta":
			got.text += ev.AsResponseOutputTextDelta().Delta
		case "response.function_call_arguments.delta":
			got.arguments += ev.AsResponseFunctionCallArgumentsDelta().Delta
		case "response.custom_tool_call_input.delta":
			got.arguments += ev.AsResponseCustomToolCallInputDelta().Delta
		case "response.output_item.done":
			got.items = append(got.items, ev.AsResponseOutputItemDone().Item)
		case "response.completed":
			r := ev.AsResponseCompleted().Response
			got.completed = &r
		case "response.failed":
			r := ev.AsResponseFailed().Response
			got.failed = &r
		}
	}
	return got, s.Err()
}

func TestResponsesText(t *testing.T) {
	fake := fakemodel.New(fakemodel.Reply{Text: []string{"Hel", "lo"}, Usage: &fakemodel.Usage{Input: 10, CacheRead: 30, Output: 7, Reasoning: 2}})
	defer fake.Close()
	got, err := stream(t, fake, "hi")
	if err != nil {
		t.Fatalf("streaming: %v", err)
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.done", "response.content_part.done",
		"response.output_item.done", "response.completed"}
	if !slices.Equal(got.types, want) {
		t.Errorf("events:\n got %q\nwant %q", got.types, want)
	}
	if got.text != "Hello" {
		t.Errorf("deltas = %q, want Hello", got.text)
	}
	if got.completed == nil {
		t.Fatal("no response.completed")
	}
	if text := got.completed.OutputText(); text != "Hello" {
		t.Errorf("completed output text = %q, want Hello", text)
	}
	u := got.completed.Usage
	if u.InputTokens != 40 || u.InputTokensDetails.CachedTokens != 30 || u.OutputTokens != 7 || u.OutputTokensDetails.ReasoningTokens != 2 || u.TotalTokens != 47 {
		t.Errorf("usage = %+v, want input 40 (30 cached), output 7 (2 reasoning), total 47", u)
	}
	if us := fake.Usages(); len(us) != 1 || us[0].Output != 7 {
		t.Errorf("Usages() = %+v, want the one reported", us)
	}
	if !fake.Contains(0, `"stream":true`) || !fake.Contains(0, `"input":"hi"`) {
		t.Errorf("request not recorded as sent: %s", fake.Requests())
	}
}

func TestResponsesCalls(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch\n"
	for _, tc := range []struct {
		name string
		call fakemodel.Call
		// what output_item.done must hold
		typ, namespace, payload string
		// the result Codex sends back
		result map[string]any
	}{
		{
			name: "function call",
			call: fakemodel.Call{ID: "call_1", Name: "exec_command", Input: `{"cmd":"pwd"}`},
			typ:  "function_call", payload: `{"cmd":"pwd"}`,
			result: map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "/work"},
		},
		{
			name: "namespaced MCP call",
			call: fakemodel.Call{ID: "call_2", Namespace: "mcp__agent", Name: "word_count", Input: `{"text":"a b c"}`},
			typ:  "function_call", namespace: "mcp__agent", payload: `{"text":"a b c"}`,
			result: map[string]any{"type": "function_call_output", "call_id": "call_2", "output": []any{
				map[string]any{"type": "input_text", "text": "3 words"}}},
		},
		{
			name: "custom tool call",
			call: fakemodel.Call{ID: "call_3", Name: "apply_patch", Input: patch, Custom: true},
			typ:  "custom_tool_call", payload: patch,
			result: map[string]any{"type": "custom_tool_call_output", "call_id": "call_3", "output": "Success. Updated the following files:\nA a.txt\n"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakemodel.New(fakemodel.Reply{Text: []string{"On it."}, Calls: []fakemodel.Call{tc.call}}, fakemodel.Reply{Text: []string{"done"}})
			defer fake.Close()
			got, err := stream(t, fake, "go")
			if err != nil {
				t.Fatalf("streaming: %v", err)
			}
			if len(got.items) != 2 || got.items[0].Type != "message" {
				t.Fatalf("items = %+v, want the message then the call", got.items)
			}
			item := got.items[1]
			if item.Type != tc.typ {
				t.Fatalf("call item type = %q, want %q", item.Type, tc.typ)
			}
			var callID, name, namespace, payload string
			switch tc.typ {
			case "function_call":
				fc := item.AsFunctionCall()
				callID, name, namespace, payload = fc.CallID, fc.Name, fc.Namespace, fc.Arguments
			case "custom_tool_call":
				ct := item.AsCustomToolCall()
				callID, name, namespace, payload = ct.CallID, ct.Name, ct.Namespace, ct.Input
			}
			if callID != tc.call.ID || name != tc.call.Name || namespace != tc.namespace || payload != tc.payload {
				t.Errorf("call = (%q, %q, namespace %q, %q), want (%q, %q, namespace %q, %q)",
					callID, name, namespace, payload, tc.call.ID, tc.call.Name, tc.namespace, tc.payload)
			}
			if got.arguments != tc.payload {
				t.Errorf("streamed deltas = %q, want %q", got.arguments, tc.payload)
			}
			if got.completed == nil || len(got.completed.Output) != 2 {
				t.Fatalf("completed = %+v, want both items in its output", got.completed)
			}

			// The next step sends the call and its result back.
			if _, err := stream(t, fake, "", map[string]any{"type": "message", "role": "user", "content": "go"},
				json.RawMessage(item.RawJSON()), tc.result); err != nil {
				t.Fatalf("streaming the result: %v", err)
			}
			results := fake.LastToolResults()
			if len(results) != 1 || results[0].CallID != tc.call.ID || results[0].Custom != tc.call.Custom {
				t.Fatalf("LastToolResults() = %+v, want the one result for %s", results, tc.call.ID)
			}
			if want := textOfResult(tc.result["output"]); results[0].Output != want {
				t.Errorf("result output = %q, want %q", results[0].Output, want)
			}
		})
	}
}

// textOfResult is a result's output as text.
func textOfResult(output any) string {
	if s, ok := output.(string); ok {
		return s
	}
	var b strings.Builder
	for _, p := range output.([]any) {
		b.WriteString(p.(map[string]any)["text"].(string))
	}
	return b.String()
}

func TestResponsesReasoning(t *testing.T) {
	fake := fakemodel.New(fakemodel.Reply{Thinking: []fakemodel.Thinking{{Text: []string{"think", "ing"}}, {Redacted: "opaque"}}, Text: []string{"ok"}})
	defer fake.Close()
	got, err := stream(t, fake, "hi")
	if err != nil {
		t.Fatalf("streaming: %v", err)
	}
	if got.reasoning != "thinking" || got.text != "ok" {
		t.Errorf("reasoning %q, text %q: want \"thinking\" then \"ok\"", got.reasoning, got.text)
	}
	if len(got.items) != 3 || got.items[0].Type != "reasoning" || got.items[1].Type != "reasoning" || got.items[2].Type != "message" {
		t.Fatalf("items = %+v, want two reasoning items, then the message", got.items)
	}
	first, redacted := got.items[0].AsReasoning(), got.items[1].AsReasoning()
	if len(first.Summary) != 1 || first.Summary[0].Text != "thinking" || first.EncryptedContent == "" {
		t.Errorf("reasoning item = %+v, want the summary and encrypted content", first)
	}
	if len(redacted.Summary) != 0 || redacted.EncryptedContent != "opaque" {
		t.Errorf("redacted item = %+v, want no summary and the data as encrypted content", redacted)
	}
}

func TestResponsesCallWithoutID(t *testing.T) {
	fake := fakemodel.New(fakemodel.Reply{Calls: []fakemodel.Call{{Name: "a", Input: `{}`}, {Name: "b", Input: `{}`}}})
	defer fake.Close()
	got, err := stream(t, fake, "go")
	if err != nil {
		t.Fatalf("streaming: %v", err)
	}
	if len(got.items) != 2 {
		t.Fatalf("items = %+v, want two calls", got.items)
	}
	a, b := got.items[0].AsFunctionCall(), got.items[1].AsFunctionCall()
	if a.CallID == "" || a.CallID == b.CallID || a.ID == b.ID {
		t.Errorf("call ids (%q, %q) and item ids (%q, %q): want distinct and set", a.CallID, b.CallID, a.ID, b.ID)
	}
}

func TestResponsesErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reply  fakemodel.Reply
		status int
		code   string
		msg    string
	}{
		{"rate limit", fakemodel.Reply{Status: 429, Header: map[string]string{"retry-after": "1"}}, 429, "rate_limit_exceeded", "Rate limit reached"},
		{"own message", fakemodel.Reply{Status: 400, Message: "Invalid 'input[3]'."}, 400, "", "Invalid 'input[3]'."},
		{"context length", fakemodel.Reply{ContextLength: true}, 400, "context_length_exceeded", "exceeds the context window"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakemodel.New(tc.reply)
			defer fake.Close()
			_, err := stream(t, fake, "hi")
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want an *openai.Error", err)
			}
			if apiErr.StatusCode != tc.status || apiErr.Code != tc.code || !strings.Contains(apiErr.Message, tc.msg) {
				t.Errorf("error = %d %q %q, want %d %q containing %q", apiErr.StatusCode, apiErr.Code, apiErr.Message, tc.status, tc.code, tc.msg)
			}
			for k, v := range tc.reply.Header {
				if got := apiErr.Response.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestResponsesWindow(t *testing.T) {
	fake := fakemodel.New(fakemodel.Reply{Text: []string{"kept"}})
	defer fake.Close()
	fake.SetWindow(5)
	_, err := stream(t, fake, strings.Repeat("long prompt ", 20))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "context_length_exceeded" {
		t.Fatalf("err = %v, want 400 context_length_exceeded", err)
	}
	fake.SetWindow(0)
	if got, err := stream(t, fake, "short"); err != nil || got.text != "kept" {
		t.Errorf("next answer = %q, %v: want the scripted reply, untaken by the refusal", got.text, err)
	}
}

func TestResponsesStreamError(t *testing.T) {
	fake := fakemodel.New(fakemodel.Reply{Text: []string{"partial"}, Calls: []fakemodel.Call{{ID: "c", Name: "x", Input: `{}`}}, StreamError: true})
	defer fake.Close()
	got, err := stream(t, fake, "hi")
	if err != nil {
		t.Fatalf("streaming: %v", err)
	}
	if got.text != "partial" || got.completed != nil || got.failed == nil {
		t.Fatalf("text %q, completed %v, failed %v: want the text, then response.failed", got.text, got.completed, got.failed)
	}
	if got.failed.Status != "failed" || got.failed.Error.Code != "server_error" {
		t.Errorf("failed response = %s %+v, want status failed with a server_error", got.failed.Status, got.failed.Error)
	}
	if len(got.items) != 1 {
		t.Errorf("items = %d, want only the message before the failure", len(got.items))
	}
}

func TestResponsesNotStreamed(t *testing.T) {
	fake := fakemodel.New(fakemodel.Reply{Text: []string{"a", "b"}, Calls: []fakemodel.Call{{ID: "c1", Name: "f", Input: `{"x":1}`, Namespace: "mcp__s"}}})
	defer fake.Close()
	client := responsesClient(fake)
	resp, err := client.Responses.New(context.Background(), responses.ResponseNewParams{Model: "gpt-5.4",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	if err != nil {
		t.Fatalf("asking: %v", err)
	}
	if resp.Status != "completed" || resp.OutputText() != "ab" || len(resp.Output) != 2 {
		t.Fatalf("response = %s %q with %d items, want completed, \"ab\" and 2 items", resp.Status, resp.OutputText(), len(resp.Output))
	}
	fc := resp.Output[1].AsFunctionCall()
	if fc.CallID != "c1" || fc.Namespace != "mcp__s" || fc.Arguments != `{"x":1}` {
		t.Errorf("call = %+v", fc)
	}
	if resp.Usage.TotalTokens == 0 {
		t.Errorf("usage = %+v, want figures", resp.Usage)
	}
}

func TestResponsesPaths(t *testing.T) {
	fake := fakemodel.New()
	defer fake.Close()
	for _, path := range []string{"/v1/responses", "/responses"} {
		resp, err := http.Post(fake.URL+path, "application/json", strings.NewReader(`{"model":"m","input":"hi","stream":true}`))
		if err != nil {
			t.Fatalf("posting %s: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Errorf("%s: %d %s, want 200 text/event-stream", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
}

func TestResponsesRouted(t *testing.T) {
	router := fakemodel.NewRouter()
	defer router.Close()
	router.Route("case-7", fakemodel.Reply{Text: []string{"routed"}})
	resp, err := http.Post(router.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"m","input":"case-7: go","stream":true}`))
	if err != nil {
		t.Fatalf("posting: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `"delta":"routed"`) || !strings.Contains(string(body), "event: response.completed") {
		t.Errorf("answer = %s, want the marker's reply, completed", body)
	}
	if n := router.Requests("case-7"); n != 1 {
		t.Errorf("the marker's Server received %d requests, want 1", n)
	}
}
