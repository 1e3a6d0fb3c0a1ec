package agentsdk_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// README's Audit table names every kind of entry the host writes (each
// AuditKind constant of api/audit.go) in its first column, and every form
// a principal takes in its principal column.
func TestREADMEAuditTable(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "\n### Audit\n")
	if i < 0 {
		t.Fatal("README.md has no ### Audit section")
	}
	text = text[i+1:]
	if j := strings.Index(text, "\n## "); j > 0 {
		text = text[:j]
	}
	kinds, principals := map[string]bool{}, ""
	for line := range strings.Lines(text) {
		cells := strings.Split(line, "|")
		if len(cells) < 6 || !strings.HasPrefix(line, "| `") {
			continue
		}
		for k := range strings.SplitSeq(cells[1], ",") {
			kinds[strings.Trim(strings.TrimSpace(k), "`")] = true
		}
		principals += cells[3]
	}

	for _, k := range auditKinds(t) {
		if !kinds[k] {
			t.Errorf("README.md's Audit table has no row for the kind %q", k)
		}
	}
	for k := range kinds {
		if !slices.Contains(auditKinds(t), k) {
			t.Errorf("README.md's Audit table has a row for %q, which api/audit.go does not declare", k)
		}
	}
	for _, p := range []string{"`bearer-token`", "`key:<id>`", "`oidc:<sub>`", "`<principal>:<onBehalfOf>`", "`slack:<user>`"} {
		if !strings.Contains(principals, p) {
			t.Errorf("README.md's Audit table names no principal %s", p)
		}
	}
}

// auditKinds are the values of the AuditKind constants in api/audit.go.
func auditKinds(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "api/audit.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "AuditKind" {
				continue
			}
			for _, val := range v.Values {
				if lit, ok := val.(*ast.BasicLit); ok {
					k, _ := strconv.Unquote(lit.Value)
					out = append(out, k)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("api/audit.go declares no AuditKind constants")
	}
	return out
}
