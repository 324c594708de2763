package examples

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExampleTestsImportOnlyPublicPackages fails for every test file under examples/ (except
// examples/internal, which holds this repository's own checks) that imports an internal package: a user
// copying that test into their module could not build it.
func TestExampleTestsImportOnlyPublicPackages(t *testing.T) {
	found, err := internalImports(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range found {
		t.Errorf("examples/%s (package %s) imports %s, which another module cannot import: "+
			"use a public package (testing/harness, testing/optest, testing/schematest, ...), or make the "+
			"check a test of the internal package itself (as examples/internal/configcheck does)", v.File, v.Package, v.Import)
	}
}

// TestInternalImports checks the check on trees made to fail it.
func TestInternalImports(t *testing.T) {
	tests := map[string]struct {
		root string
		want []violation
	}{
		"internal imports of test files, tagged or not, in and outside of the package": {
			root: "testdata/internalimport",
			want: []violation{
				{File: "widget/tagged_test.go", Package: "widget", Import: "github.com/convergo-dev/convergo/internal/testapi"},
				{File: "widget/widget_test.go", Package: "widget_test", Import: "github.com/convergo-dev/convergo/examples/internal/gencheck"},
				{File: "widget/widget_test.go", Package: "widget_test", Import: "github.com/convergo-dev/convergo/testing/internal/apirequest"},
			},
		},
		"a tree whose tests import only public packages": {
			root: "testdata/publicimport",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := internalImports(tc.root)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("internalImports(%q) (-want +got):\n%s", tc.root, diff)
			}
		})
	}
}

// violation is a test file's import of an internal package.
type violation struct {
	File    string // relative to the root
	Package string
	Import  string
}

// internalImports returns the imports of internal packages (a path element "internal") by the test files
// under root, sorted by file and import. It reads every _test.go file whatever its build constraints,
// and skips root/internal, testdata directories, and the directories the go command ignores.
func internalImports(root string) ([]violation, error) {
	var found []violation
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (rel == "internal" || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return fmt.Errorf("read the imports of %s: %w", path, err)
		}
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: import %s: %w", path, spec.Path.Value, err)
			}
			if slices.Contains(strings.Split(imp, "/"), "internal") {
				found = append(found, violation{File: filepath.ToSlash(rel), Package: f.Name.Name, Import: imp})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the imports of the tests under %s: %w", root, err)
	}
	slices.SortFunc(found, func(a, b violation) int {
		return strings.Compare(a.File+"\x00"+a.Import, b.File+"\x00"+b.Import)
	})
	return found, nil
}
