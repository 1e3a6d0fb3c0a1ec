// Package httpjson writes the HTTP API's JSON answers, for the serve host
// and the built-in channels alike: one encoding (HTML left unescaped) and
// one error shape (api.ErrorResponse with the status of its code).
package httpjson

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/agentsdk/agentsdk/api"
)

// Write answers status with v as JSON. A v that cannot be encoded is
// answered 500 in the API's error shape instead.
func Write(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		b.Reset()
		b.WriteString(`{"ok":false,"error":{"code":"internal","message":"encoding the response failed"}}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// Error answers any error in the API's one error shape, with the status of
// its code (api.AsError: an *api.Error as it is, anything else internal).
func Error(w http.ResponseWriter, err error) {
	e := api.AsError(err)
	Write(w, e.Status(), api.ErrorResponse{Error: e})
}
