package provider

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestRecordsOwnerInterface holds the rest of the package to the
// exported methods of bindingRecords, the owner of the bindings' records
// (records.go): its unexported methods and fields are its own, used only
// in records*.go.
func TestRecordsOwnerInterface(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "records") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || ast.IsExported(sel.Sel.Name) {
				return true
			}
			if inner, ok := sel.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "records" {
				t.Errorf("%s: %s.records.%s: outside records*.go, call only bindingRecords's exported methods",
					fset.Position(sel.Pos()), exprName(inner.X), sel.Sel.Name)
			}
			return true
		})
	}
}

func exprName(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "…"
}
