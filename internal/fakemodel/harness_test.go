package fakemodel_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// What the coding-agent harnesses need of the fake beyond a model step:
// Claude Code's HEAD probe, Gemini CLI's side questions, and reading what
// they sent back for the fake's calls.

func TestHeadProbe(t *testing.T) {
	fake := fakemodel.New(fakemodel.Reply{Text: []string{"scripted"}})
	defer fake.Close()
	router := fakemodel.NewRouter()
	defer router.Close()
	for _, url := range []string{fake.URL + "/", fake.URL + "/v1/messages", router.URL + "/"} {
		resp, err := http.Head(url)
		if err != nil {
			t.Fatalf("HEAD %s: %v", url, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("HEAD %s = %d, want 200", url, resp.StatusCode)
		}
	}
	if n := len(fake.Requests()) + len(router.Default.Requests()); n != 0 {
		t.Errorf("%d requests recorded, want none for a probe", n)
	}
	if _, body := post(t, fake, "claude-sonnet-4-6", "user", "hi"); !strings.Contains(body, "scripted") {
		t.Errorf("the step after the probes got %q, want the scripted reply (untaken by a probe)", body)
	}
}

// geminiClient is the official client pointed at the fake, without retries.
func geminiClient(t *testing.T, fake *fakemodel.Server) *genai.Client {
	t.Helper()
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "k", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: fake.GeminiURL(), RetryOptions: &genai.HTTPRetryOptions{Attempts: genai.Ptr[int32](1)}},
	})
	if err != nil {
		t.Fatalf("making the client: %v", err)
	}
	return client
}

func TestGeminiSideQuestion(t *testing.T) {
	fake := fakemodel.New(fakemodel.Reply{Text: []string{"the ", "step"}})
	defer fake.Close()
	client := geminiClient(t, fake)
	ctx := context.Background()
	prompt := []*genai.Content{genai.NewContentFromText("pick a model", genai.RoleUser)}

	// Gemini CLI asks its router first, for JSON.
	side, err := client.Models.GenerateContent(ctx, "gemini-3.5-flash-lite", prompt, &genai.GenerateContentConfig{ResponseMIMEType: "application/json"})
	if err != nil {
		t.Fatalf("asking the router: %v", err)
	}
	var answer struct {
		ComplexityScore *int   `json:"complexity_score"`
		NextSpeaker     string `json:"next_speaker"`
		ModelChoice     string `json:"model_choice"`
	}
	if err := json.Unmarshal([]byte(side.Text()), &answer); err != nil || answer.ComplexityScore == nil || answer.NextSpeaker != "user" || answer.ModelChoice == "" {
		t.Errorf("router answer %q (%v): want JSON with complexity_score, next_speaker user and model_choice", side.Text(), err)
	}

	// Then the step, streamed, gets the script's reply.
	var text strings.Builder
	for chunk, err := range client.Models.GenerateContentStream(ctx, "gemini-3.8-flash", prompt, nil) {
		if err != nil {
			t.Fatalf("streaming the step: %v", err)
		}
		text.WriteString(chunk.Text())
	}
	if text.String() != "the step" {
		t.Errorf("step = %q, want the scripted reply", text.String())
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d requests recorded, want only the step", n)
	}
}

func TestGeminiGenerateContent(t *testing.T) {
	fake := fakemodel.New(fakemodel.Reply{Thoughts: []string{"hm"}, Text: []string{"a", "b"}},
		fakemodel.Reply{Calls: []fakemodel.Call{{Name: "read_file", Input: `{"path":"x"}`}}})
	defer fake.Close()
	client := geminiClient(t, fake)
	ctx := context.Background()
	prompt := []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}

	resp, err := client.Models.GenerateContent(ctx, "gemini-2.5-flash", prompt, nil)
	if err != nil {
		t.Fatalf("asking: %v", err)
	}
	if resp.Text() != "ab" || len(resp.Candidates[0].Content.Parts) != 3 || resp.Candidates[0].FinishReason != genai.FinishReasonStop {
		t.Errorf("answer %q in %d parts, finish %s: want \"ab\" in one part after the thought, and the signature part", resp.Text(),
			len(resp.Candidates[0].Content.Parts), resp.Candidates[0].FinishReason)
	}
	resp, err = client.Models.GenerateContent(ctx, "gemini-2.5-flash", prompt, nil)
	if err != nil {
		t.Fatalf("asking again: %v", err)
	}
	calls := resp.FunctionCalls()
	if len(calls) != 1 || calls[0].Name != "read_file" || calls[0].Args["path"] != "x" {
		t.Errorf("calls = %+v, want read_file(path x)", calls)
	}
}

func TestToolResults(t *testing.T) {
	for _, tc := range []struct {
		name, path, body string
		want             []fakemodel.ToolResult
	}{
		{
			name: "anthropic", path: "/v1/messages",
			body: `{"model":"m","messages":[{"role":"user","content":"go"},
				{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"out"}]},
					{"type":"tool_result","tool_use_id":"toolu_2","content":"User refused permission to run tool","is_error":true}]}]}`,
			want: []fakemodel.ToolResult{{CallID: "toolu_1", Output: "out"}, {CallID: "toolu_2", Output: "User refused permission to run tool", IsError: true}},
		},
		{
			name: "chat completions", path: "/v1/chat/completions",
			body: `{"model":"m","messages":[{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[]},
				{"role":"tool","tool_call_id":"call_1","content":"42"}]}`,
			want: []fakemodel.ToolResult{{CallID: "call_1", Output: "42"}},
		},
		{
			name: "gemini", path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
			body: `{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"functionCall":{"name":"a","args":{}}}]},
				{"role":"user","parts":[{"functionResponse":{"id":"a-1","name":"a","response":{"output":"fine"}}},
					{"functionResponse":{"id":"b-1","name":"b","response":{"error":"Tool \"b\" was canceled by the user."}}},
					{"functionResponse":{"id":"c-1","name":"c","response":{"n":1}}}]}]}`,
			want: []fakemodel.ToolResult{{CallID: "a-1", Name: "a", Output: "fine"}, {CallID: "b-1", Name: "b", Output: `Tool "b" was canceled by the user.`, IsError: true},
				{CallID: "c-1", Name: "c", Output: `{"n":1}`}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakemodel.New()
			defer fake.Close()
			req, _ := http.NewRequest(http.MethodPost, fake.URL+tc.path, strings.NewReader(tc.body))
			req.Header.Set("x-goog-api-key", "k")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("posting: %v", err)
			}
			resp.Body.Close()
			got := fake.LastToolResults()
			if len(got) != len(tc.want) {
				t.Fatalf("LastToolResults() = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("result %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
			if fake.ToolResults(1) != nil || fake.ToolResults(-1) != nil {
				t.Error("ToolResults of a request never received: want nil")
			}
		})
	}
}
