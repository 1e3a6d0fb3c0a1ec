package gemini

import (
	"encoding/json"
	"testing"

	"github.com/agentsdk/agentsdk/model"
)

// Each kind of signature goes back on the part it came on; reasoning that
// is not Gemini's, or not well formed, or unsigned, is not sent.
func TestSignaturesRoundTrip(t *testing.T) {
	t.Parallel()
	sig := []byte{0, 1, 2, 0xfe, 0xff}
	msg := model.Message{
		Role: model.Assistant,
		Text: "Let me look.",
		Reasoning: []model.Reasoning{
			{Text: "unsigned: only shown"},
			{Text: "sealed thought", Signature: thoughtSignature(sig)},
			{Text: "an Anthropic block", Signature: "EqQBCkgIARABGAIiQL"},
			{Signature: "gemini:call:broken"},
			{Signature: "gemini:text:!!not base64"},
			{Signature: textSignature([]byte("t"))},
			{Signature: callSignature("c:1", []byte("c"))},
		},
		ToolCalls: []model.ToolCall{
			{ID: "c:1", Name: "look", Input: json.RawMessage(`{"at":"here"}`)},
			{ID: madeIDPrefix + "x_2", Name: "look", Input: json.RawMessage(`{"at":`)},
		},
	}
	got, _ := json.Marshal(contents([]model.Message{msg}))
	want := `[{"parts":[` +
		`{"text":"sealed thought","thought":true,"thoughtSignature":"AAEC/v8="},` +
		`{"text":"Let me look.","thoughtSignature":"dA=="},` +
		`{"functionCall":{"id":"c:1","args":{"at":"here"},"name":"look"},"thoughtSignature":"Yw=="},` +
		`{"functionCall":{"name":"look"}}` + // empty args are left out
		`],"role":"model"}]`
	if string(got) != want {
		t.Errorf("contents:\n%s\nwant:\n%s", got, want)
	}
}
