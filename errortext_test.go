package agentsdk_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// No code outside tests classifies an error by its text: errors are told
// apart with errors.Is/As and api.Error codes. This walks every non-test Go
// file for a comparison with, or a strings function applied to, the result
// of an Error() call.
func TestNoErrorTextClassification(t *testing.T) {
	fset := token.NewFileSet()
	var found []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if (n.Op == token.EQL || n.Op == token.NEQ) && (isErrorCall(n.X) || isErrorCall(n.Y)) {
					found = append(found, fset.Position(n.Pos()).String())
				}
			case *ast.SwitchStmt:
				if isErrorCall(n.Tag) {
					found = append(found, fset.Position(n.Pos()).String())
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
					if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "strings" && classifies[sel.Sel.Name] {
						for _, a := range n.Args {
							if isErrorCall(a) {
								found = append(found, fset.Position(n.Pos()).String())
							}
						}
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Errorf("%s: classifies an error by its text; use errors.Is/As or an api.Error code", f)
	}
}

// classifies are the strings functions that test a text.
var classifies = map[string]bool{"Contains": true, "ContainsAny": true, "HasPrefix": true, "HasSuffix": true, "EqualFold": true, "Index": true, "Compare": true}

// isErrorCall reports whether e is a call x.Error() with no arguments.
func isErrorCall(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 0 {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Error"
}
