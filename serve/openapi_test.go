package serve_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
)

// The served OpenAPI document describes exactly what the server mounts:
// every route is in it, every path in it is served (not 404 not_found), and
// each server tool has its own call path.
func TestOpenAPIDocumentMatchesRoutes(t *testing.T) {
	b := setup(t)
	status, doc := b.do(t, "GET", "/agent/v1/openapi.json", testToken, "")
	if status != 200 || !strings.HasPrefix(doc["openapi"].(string), "3.1") {
		t.Fatalf("status %d, openapi %v", status, doc["openapi"])
	}
	paths, _ := doc["paths"].(map[string]any)
	wildcard := regexp.MustCompile(`\{[^}]*\}`)
	for _, r := range api.Routes {
		path := strings.ReplaceAll(r.FullPath("agent"), "...}", "}")
		ops, _ := paths[path].(map[string]any)
		if ops[strings.ToLower(r.Method)] == nil {
			t.Errorf("route %s (%s %s) is not in the document", r.Name, r.Method, path)
		}
	}
	for path, ops := range paths {
		for method := range ops.(map[string]any) {
			concrete := wildcard.ReplaceAllString(path, "x")
			status, v := b.do(t, strings.ToUpper(method), concrete, testToken, "{}")
			if e, _ := v["error"].(map[string]any); status == 404 && e["code"] == "not_found" || status == 405 {
				t.Errorf("%s %s is in the document but not served: %d %v", method, path, status, v)
			}
		}
	}
	for _, name := range []string{"inspect_pr", "fail", "promote"} {
		if paths["/agent/v1/tools/"+name] == nil {
			t.Errorf("server tool %s has no path of its own", name)
		}
	}
	if paths["/agent/v1/tools/echo"] != nil {
		t.Error("agent tool echo has a call path, but it cannot be called directly")
	}
}
