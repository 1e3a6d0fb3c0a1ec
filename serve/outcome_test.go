package serve

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/agentsdk/agentsdk/api"
)

// The hand-written answer is exactly what encoding/json writes.
func TestWriteOutcomeMatchesEncodingJSON(t *testing.T) {
	for _, out := range []api.Outcome{
		{ToolName: "inspect_pr", CallID: "tool_inspect_pr_abc", Result: json.RawMessage(`{"ready":true}`), DurationMs: 12},
		{ToolName: "fail-2", CallID: "tool_fail-2_x", IsError: true, Result: json.RawMessage(`"no such PR"`)},
		{ToolName: "n", CallID: "tool_n_y", Result: json.RawMessage(`null`)},
		{ToolName: "n", CallID: "tool_n_y"},
	} {
		rec := httptest.NewRecorder()
		writeOutcome(rec, &out)
		want, _ := json.Marshal(api.CallResponse{OK: true, Outcome: out})
		if got := rec.Body.String(); got != string(want)+"\n" {
			t.Errorf("writeOutcome = %s, encoding/json = %s", got, want)
		}
		if rec.Header().Get("Content-Type") != "application/json" || rec.Code != 200 {
			t.Errorf("headers %v, status %d", rec.Header(), rec.Code)
		}
	}
}

func TestParseCallRequest(t *testing.T) {
	tests := []struct {
		body, input, session, err string
	}{
		{`{"input":{"a":[1,{"b":null}]}}`, `{"a":[1,{"b":null}]}`, "", ""},
		{` {"sessionId":"s\u0031","input":{}} `, `{}`, "s1", ""},
		{`{"sessionId":null}`, ``, "", ""},
		{`{}`, ``, "", ""},
		{`{"input":{},"extra":1}`, "", "", `request body: unknown field "extra": only input and sessionId are allowed`},
		{`{"sessionId":1}`, "", "", "request body: sessionId must be a string"},
		{`{"input":{}`, "", "", "request body: unexpected end of JSON input (at byte 11)"},
		{`{"input":{}} {}`, "", "", "request body: invalid character '{' after top-level value (at byte 14)"},
		{`[]`, "", "", `request body: must be a JSON object such as {"input": {…}}`},
		{`  `, "", "", `request body: empty; send a JSON object such as {"input": {…}}`},
	}
	for _, tt := range tests {
		req, err := parseCallRequest([]byte(tt.body))
		if tt.err != "" {
			e := api.AsError(err)
			if err == nil || e.Message != tt.err || e.Status() != 400 || e.Code != api.CodeMalformedJSON {
				t.Errorf("%s: error %+v, want %q", tt.body, err, tt.err)
			}
			continue
		}
		if err != nil || string(req.Input) != tt.input || req.SessionID != tt.session {
			t.Errorf("%s: %+v, %v", tt.body, req, err)
		}
	}
}
