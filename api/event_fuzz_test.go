package api_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentsdk/agentsdk/api"
)

// FuzzEventRoundTrip fuzzes events as a client reads them off a stream
// (and the host reads its own history back): an event and its payload,
// of any kind, decode without panicking, and what decodes encodes to
// bytes that decode to the same thing again.
func FuzzEventRoundTrip(f *testing.F) {
	for _, s := range []string{
		`{"sessionId":"sess_1","seq":1,"kind":"session.created","data":{"channel":"http","mode":"local","principal":"p"},"time":"2026-11-30T12:00:00Z"}`,
		`{"sessionId":"s","seq":2,"turnId":"t","kind":"message","data":{"role":"user","text":"hi"},"time":"2026-11-30T12:00:00.123456789+05:30"}`,
		`{"seq":3,"kind":"action.approval_requested","data":{"callId":"c","expiresAt":"2026-11-30T12:00:00Z","input":{"a":1},"tool":"t"}}`,
		`{"seq":4,"kind":"action.result","data":{"callId":"c","tool":"t","isError":true,"result":"boom","durationMs":3}}`,
		`{"seq":5,"kind":"actions.requested","data":{"actions":[{"callId":"c","tool":"t","input":{}}]}}`,
		`{"seq":6,"kind":"turn.completed","data":{"steps":2}}`, `{"seq":7,"kind":"turn.failed","data":{"reason":"x"}}`,
		`{"seq":8,"kind":"action.approval_resolved","data":{"at":"0001-01-01T00:00:00Z","approved":true}}`,
		`{"seq":-1,"kind":"no.such.kind","data":null}`, `{"kind":"message","data":[]}`, `{"time":"9999-12-31T23:59:59-23:59"}`,
		`{"data":{"a":1,"a":2}}`, `{}`, `null`, `[]`, `{"seq":1e400}`, `{"kind":"message","data":{"text":"\ud800"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var e api.Event
		if json.Unmarshal(data, &e) != nil {
			return
		}
		once, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("an event decoded from %q does not encode: %v", data, err)
		}
		var again api.Event
		if err := json.Unmarshal(once, &again); err != nil {
			t.Fatalf("%q encodes to %q, which does not decode: %v", data, once, err)
		}
		if twice, _ := json.Marshal(again); !bytes.Equal(once, twice) {
			t.Fatalf("%q: encoded %q, then %q", data, once, twice)
		}
		p := api.PayloadOf(e.Kind)
		if p == nil || json.Unmarshal(e.Data, p) != nil {
			return
		}
		ev := api.NewEvent(p)
		if ev.Kind != e.Kind {
			t.Fatalf("%q: payload of kind %s makes an event of kind %s", data, e.Kind, ev.Kind)
		}
		q := api.PayloadOf(e.Kind)
		if err := json.Unmarshal(ev.Data, q); err != nil {
			t.Fatalf("%q: payload encodes to %q, which does not decode: %v", data, ev.Data, err)
		}
		if ev2 := api.NewEvent(q); !bytes.Equal(ev.Data, ev2.Data) {
			t.Fatalf("%q: payload encoded %q, then %q", data, ev.Data, ev2.Data)
		}
	})
}
