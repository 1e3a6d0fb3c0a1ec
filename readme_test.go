package agentsdk_test

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
)

var update = flag.Bool("update", false, "rewrite the generated sections of README.md")

// README's tables of the HTTP API and its error codes are generated from
// the protocol package, so that they cannot drift from what the server
// mounts and answers: go test . -run TestREADMETables -update rewrites them.
func TestREADMETables(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	for _, sec := range []struct{ name, body string }{
		{"api-routes", routeTable()},
		{"api-errors", errorTable()},
		{"failure-codes", failureTable()},
	} {
		begin, end := "<!-- begin "+sec.name+" (generated: go test . -run TestREADMETables -update) -->\n", "<!-- end "+sec.name+" -->"
		i, j := strings.Index(text, begin), strings.Index(text, end)
		if i < 0 || j < i {
			t.Fatalf("README.md has no section %q…%q", begin, end)
		}
		got := text[i+len(begin) : j]
		if got == sec.body {
			continue
		}
		if *update {
			text = text[:i+len(begin)] + sec.body + text[j:]
			continue
		}
		t.Errorf("README.md's %s table is out of date; run go test . -run TestREADMETables -update\nwant:\n%s", sec.name, sec.body)
	}
	if *update {
		if err := os.WriteFile("README.md", []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func failureTable() string {
	var b strings.Builder
	b.WriteString("| code | why the turn failed |\n| --- | --- |\n")
	for _, f := range api.FailureCodes {
		fmt.Fprintf(&b, "| `%s` | %s |\n", f.Code, f.Meaning)
	}
	return b.String()
}

func routeTable() string {
	var b strings.Builder
	b.WriteString("| request | permission | body | answer | what |\n| --- | --- | --- | --- | --- |\n")
	for _, r := range api.Routes {
		path := r.FullPath("<slug>")
		sep := "?"
		for _, p := range r.Params {
			if p.In == "query" {
				path += sep + p.Name + "="
				sep = "&"
			}
		}
		req := ""
		if r.Request != nil {
			req = "`" + fields(r.Request) + "`"
		}
		var answers []string
		for _, resp := range r.Responses {
			a := fmt.Sprint(resp.Status)
			switch {
			case resp.ContentType != "" && resp.ContentType != "application/json":
				a += " " + resp.ContentType
			case resp.Body != nil:
				a += " `" + fields(resp.Body) + "`"
			}
			answers = append(answers, a)
		}
		perm := "none"
		if r.Permission != "" {
			perm = "`" + string(r.Permission) + "`"
		}
		fmt.Fprintf(&b, "| `%s %s` | %s | %s | %s | %s |\n", r.Method, strings.ReplaceAll(path, "|", `\|`), perm, req, strings.Join(answers, "; "), r.Summary)
	}
	return b.String()
}

// fields lists a body type's JSON fields: {ok, sessionId, turnId}.
func fields(v any) string {
	var names []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				walk(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && name != "-" {
				names = append(names, name)
			}
		}
	}
	walk(reflect.TypeOf(v))
	return "{" + strings.Join(names, ", ") + "}"
}

func errorTable() string {
	var b strings.Builder
	b.WriteString("| code | status | when |\n| --- | --- | --- |\n")
	for _, c := range api.Codes() {
		fmt.Fprintf(&b, "| `%s` | %d | %s |\n", c, c.Status(), c.Description())
	}
	return b.String()
}
