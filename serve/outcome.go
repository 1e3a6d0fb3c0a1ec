package serve

import (
	"net/http"
	"strconv"

	"github.com/agentsdk/agentsdk/api"
)

var jsonContentType = []string{"application/json"}

// writeOutcome writes a direct call's answer,
// {"ok":true,"toolName":…,"callId":…,"isError":…,"result":…,"durationMs":…},
// by hand: it is the hot path, and every part is already JSON or needs no
// escaping (tool names and call ids are letters, digits, '_' and '-').
func writeOutcome(w http.ResponseWriter, out *api.Outcome) {
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(http.StatusOK)
	w.Write(outcomeBody(out))
}

// outcomeBody is a direct call's answer's body.
func outcomeBody(out *api.Outcome) []byte {
	b := make([]byte, 0, 96+len(out.ToolName)+len(out.CallID)+len(out.Result))
	b = append(b, `{"ok":true,"toolName":"`...)
	b = append(b, out.ToolName...)
	b = append(b, `","callId":"`...)
	b = append(b, out.CallID...)
	b = append(b, `","isError":`...)
	b = strconv.AppendBool(b, out.IsError)
	b = append(b, `,"result":`...)
	if len(out.Result) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, out.Result...)
	}
	b = append(b, `,"durationMs":`...)
	b = strconv.AppendInt(b, out.DurationMs, 10)
	return append(b, "}\n"...)
}
