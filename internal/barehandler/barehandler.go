// Package barehandler is the yardstick of the hot-path benchmarks: a bare
// net/http handler doing the JSON work of a direct call of the
// quickstart's inspect_pr (decode the body, build the same result, encode
// {"ok":true,"result":…}) with encoding/json, and nothing else — no auth,
// no validation, no log. bench/load serves it next to the SDK's host, and
// BenchmarkServeDirectCallBare calls it in process.
package barehandler

import (
	"encoding/json"
	"net/http"
)

// ServeHTTP answers a direct call of inspect_pr as a hand-written handler
// would.
func ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Input struct {
			PRURL string `json:"prUrl"`
		} `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	result := map[string]any{"prUrl": req.Input.PRURL, "checks": []string{"unit", "lint"}, "ready": true}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}
