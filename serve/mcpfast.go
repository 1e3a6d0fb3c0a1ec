package serve

import "net/http"

// fast answers a single tools/call as the SDK would; false leaves the
// request to the SDK.
func (e *mcpEndpoint) fast(w http.ResponseWriter, r *http.Request) bool { return false }
