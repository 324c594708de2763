package reconcile_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestEveryHookAndOptionIsExercised fails for each field of Hooks and each With... option of this
// package and of its subpackages that no test of the library (reconcile/..., examples/..., sharding/...) uses: a
// hook or option that no test sets may be unwired, and nothing would tell.
func TestEveryHookAndOptionIsExercised(t *testing.T) {
	var names []string
	fset := token.NewFileSet()
	for _, dir := range []string{".", "apply", "graph", "childcache"} {
		pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range pkgs {
			for _, f := range pkg.Files {
				for _, d := range f.Decls {
					switch d := d.(type) {
					case *ast.FuncDecl:
						if d.Recv == nil && strings.HasPrefix(d.Name.Name, "With") && d.Name.IsExported() {
							names = append(names, d.Name.Name+"(")
						}
					case *ast.GenDecl:
						for _, s := range d.Specs {
							ts, ok := s.(*ast.TypeSpec)
							if !ok || ts.Name.Name != "Hooks" {
								continue
							}
							for _, field := range ts.Type.(*ast.StructType).Fields.List {
								for _, n := range field.Names {
									names = append(names, n.Name+":")
								}
							}
						}
					}
				}
			}
		}
	}
	if !slices.Contains(names, "Suspended:") || !slices.Contains(names, "WithOwns(") {
		t.Fatalf("found %v: the parse missed Hooks or the options", names)
	}
	var tests strings.Builder
	for _, root := range []string{".", "../examples", "../sharding"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "exercised_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			tests.Write(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(name)).MatchString(tests.String()) {
			t.Errorf("no test uses %s: write one that fails without it", strings.TrimRight(name, "(:"))
		}
	}
}
