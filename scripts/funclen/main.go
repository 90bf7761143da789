// Command funclen lists the longest functions and the longest non-test Go
// files of the module, the measure issue 28's check asks for: a function's
// length is its lines from "func" to its closing brace, a file's length is
// its line count.
//
//	go run ./scripts/funclen [-n 10] [-tests] [dir]
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type entry struct {
	name  string
	where string
	lines int
}

func main() {
	n := flag.Int("n", 10, "how many rows of each table")
	tests := flag.Bool("tests", false, "count _test.go files too")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	funcs, files, err := measure(root, *tests)
	if err != nil {
		fmt.Fprintln(os.Stderr, "funclen:", err)
		os.Exit(1)
	}
	over := 0
	for _, f := range funcs {
		if f.lines > 100 {
			over++
		}
	}
	bigFiles := 0
	for _, f := range files {
		if f.lines > 600 {
			bigFiles++
		}
	}
	fmt.Printf("functions over 100 lines: %d; files over 600 lines: %d\n\n", over, bigFiles)
	fmt.Println("longest functions")
	for i, f := range funcs {
		if i == *n {
			break
		}
		fmt.Printf("%5d  %-40s %s\n", f.lines, f.name, f.where)
	}
	fmt.Println("\nlongest files")
	for i, f := range files {
		if i == *n {
			break
		}
		fmt.Printf("%5d  %s\n", f.lines, f.where)
	}
}

func measure(root string, tests bool) (funcs, files []entry, err error) {
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || (!tests && strings.HasSuffix(path, "_test.go")) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files = append(files, entry{where: rel, lines: fset.File(f.Pos()).LineCount()})
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
			funcs = append(funcs, entry{
				name:  funcName(f.Name.Name, fn),
				where: fmt.Sprintf("%s:%d", rel, start.Line),
				lines: end.Line - start.Line + 1,
			})
		}
		return nil
	})
	byLength := func(s []entry) {
		sort.SliceStable(s, func(i, j int) bool {
			if s[i].lines != s[j].lines {
				return s[i].lines > s[j].lines
			}
			return s[i].where < s[j].where
		})
	}
	byLength(funcs)
	byLength(files)
	return funcs, files, err
}

func funcName(pkg string, fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return pkg + "." + fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return pkg + "." + id.Name + "." + fn.Name.Name
	}
	return pkg + "." + fn.Name.Name
}
