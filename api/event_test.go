package api_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// Every kind has one payload type, and PayloadOf knows it.
func TestEveryKindHasItsPayload(t *testing.T) {
	seen := map[api.Kind]bool{}
	for _, k := range api.Kinds {
		if seen[k] {
			t.Errorf("%s is listed twice", k)
		}
		seen[k] = true
		p := api.PayloadOf(k)
		if p == nil || p.EventKind() != k {
			t.Errorf("PayloadOf(%s) = %T", k, p)
		}
	}
	if api.PayloadOf("no.such.kind") != nil {
		t.Error("an unknown kind has a payload")
	}
}

// An event is read back through the type it was written with, and the
// wire bytes are those the host has always written (alphabetical fields
// where the first wave wrote maps).
func TestEventRoundTrip(t *testing.T) {
	steps := 2
	expires := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		payload api.Payload
		wire    string
	}{
		{api.Message{Role: api.RoleUser, Text: "hi"}, `{"role":"user","text":"hi"}`},
		{api.TurnStarted{Kind: api.TurnModel}, `{"kind":"model"}`},
		{api.TurnStarted{Kind: api.TurnCall, Tool: "echo"}, `{"kind":"call","tool":"echo"}`},
		{api.TurnCompleted{Steps: &steps}, `{"steps":2}`},
		{api.TurnCompleted{}, `{}`},
		{api.TurnFailed{Reason: "cancelled", Steps: &steps}, `{"reason":"cancelled","steps":2}`},
		{api.SessionCreated{Channel: "http", Mode: api.ModeLocal, Principal: "p"}, `{"channel":"http","mode":"local","principal":"p"}`},
		{api.ApprovalRequested{CallID: "c", ExpiresAt: expires, HowToAnswer: api.HowToAnswer{CLI: "a", HTTP: "b"}, Input: json.RawMessage(`{}`), Tool: "t"},
			`{"callId":"c","expiresAt":"2026-11-30T12:00:00Z","howToAnswer":{"cli":"a","http":"b"},"input":{},"modelCallId":"","requestedBy":"","tool":"t"}`},
		{api.ArtifactCreated{CallID: "c", ContentType: "text/plain", Name: "n", SHA256: "s", Size: 1},
			`{"callId":"c","contentType":"text/plain","name":"n","sha256":"s","size":1}`},
	}
	for _, tt := range tests {
		e := api.NewEvent(tt.payload)
		if e.Kind != tt.payload.EventKind() || string(e.Data) != tt.wire {
			t.Errorf("%T: kind %s, data %s, want %s", tt.payload, e.Kind, e.Data, tt.wire)
		}
		p := api.PayloadOf(e.Kind)
		if err := json.Unmarshal(e.Data, p); err != nil {
			t.Errorf("%s: %v", e.Kind, err)
		}
	}
	m, err := api.Decode[api.Message](api.NewEvent(api.Message{Role: api.RoleAssistant, Text: "ok"}))
	if err != nil || m.Text != "ok" {
		t.Errorf("Decode: %+v, %v", m, err)
	}
	if _, err := api.Decode[api.Message](api.NewEvent(api.MessageDelta{Text: "x"})); err == nil {
		t.Error("Decode read a message.delta as a message")
	}
	bad := api.NewEvent(api.ActionResult{CallID: "c", Result: json.RawMessage(`{not json`)})
	if string(bad.Data) == "" || !json.Valid(bad.Data) {
		t.Errorf("a payload that cannot be encoded left %q", bad.Data)
	}
}

// Errors match by code, carry their status from the one table, and keep
// the tool package's typed errors reachable.
func TestErrors(t *testing.T) {
	err := api.Errorf(api.CodeSessionBusy, "turn %s runs", "t1")
	if !errors.Is(err, api.ErrSessionBusy) || errors.Is(err, api.ErrSessionNotFound) || err.Status() != http.StatusConflict {
		t.Errorf("%v: Is busy %v, status %d", err, errors.Is(err, api.ErrSessionBusy), err.Status())
	}
	in := api.AsError(&tool.InputError{Tool: "t", Violations: []tool.Violation{{Path: "input.x", Message: "is required"}}})
	var inputErr *tool.InputError
	if in.Code != api.CodeInvalidInput || len(in.Violations) != 1 || !errors.As(in, &inputErr) {
		t.Errorf("invalid input: %+v", in)
	}
	unknown := api.AsError(&tool.UnknownToolError{Name: "x"})
	if unknown.Code != api.CodeUnknownTool || unknown.Available == nil || unknown.Status() != http.StatusNotFound {
		t.Errorf("unknown tool: %+v", unknown)
	}
	if e := api.AsError(errors.New("disk full")); e.Code != api.CodeInternal || e.Status() != 500 {
		t.Errorf("other errors: %+v", e)
	}
	if e := api.AsError(&http.MaxBytesError{Limit: 10}); e.Code != api.CodeBodyTooLarge || e.Status() != 413 {
		t.Errorf("body too large: %+v", e)
	}
	for _, c := range api.Codes() {
		if c.Status() < 400 || c.Description() == "" {
			t.Errorf("code %s: status %d, %q", c, c.Status(), c.Description())
		}
	}
}
