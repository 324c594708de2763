package readmecheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goBlock finds the Go code blocks of a Markdown file.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// methodsPrelude makes a block of method declarations on *Memcached a file: a type with the status
// fields the README names, and checks that the methods give it the conditions package status needs.
const methodsPrelude = `package main

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

type Memcached struct {
	Status struct {
		Conditions         []metav1.Condition
		ObservedGeneration int64
	}
}

var _ interface {
	GetConditions() []metav1.Condition
	SetConditions([]metav1.Condition)
} = &Memcached{}

func main() {}

`

// TestReadmeCompiles builds each Go block of README.md: a complete program as it is, a block of methods
// with methodsPrelude. The README's first block must be a complete operator within its first 60 lines.
func TestReadmeCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs with the go command")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlock.FindAllSubmatchIndex(readme, -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no Go block")
	}
	first := string(readme[blocks[0][2]:blocks[0][3]])
	if end := strings.Count(string(readme[:blocks[0][1]]), "\n") + 1; !strings.HasPrefix(first, "package main\n") || end > 60 {
		t.Errorf("README.md's first Go block is not a complete program ending by line 60 (it ends at line %d)", end)
	}
	buildBlocks(t, root, "README.md", readme, blocks)
}

// TestMigratingCompiles builds each Go block of docs/migrating.md, as TestReadmeCompiles does the
// README's: the steps and the end state of moving a kubebuilder controller to Convergo.
func TestMigratingCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs with the go command")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "migrating.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlock.FindAllSubmatchIndex(doc, -1)
	if len(blocks) < 3 {
		t.Fatalf("docs/migrating.md has %d Go blocks, want the status methods, the children and the end state", len(blocks))
	}
	buildBlocks(t, root, "docs/migrating.md", doc, blocks)
}

// buildBlocks builds each Go block (at blocks, as goBlock finds them) of the Markdown file name: a
// complete program as it is, a block of methods with methodsPrelude.
func buildBlocks(t *testing.T, root, name string, md []byte, blocks [][]int) {
	t.Helper()
	for i, b := range blocks {
		src := string(md[b[2]:b[3]])
		if !strings.HasPrefix(src, "package ") {
			src = methodsPrelude + src
		}
		// Inside the module, so that the block imports Convergo as a user's module would; a directory
		// starting with "." is left out of ./... patterns.
		dir, err := os.MkdirTemp(root, ".readme-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), "go", "build", "-o", os.DevNull, ".")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			line := strings.Count(string(md[:b[2]]), "\n") + 1
			t.Errorf("%s's Go block %d (line %d) does not build: %v\n%s", name, i+1, line, err, out)
		}
	}
}

// citedTest finds a test or example function named in backquotes in Markdown.
var citedTest = regexp.MustCompile("`((?:Test|Example|Benchmark|Fuzz)[A-Za-z0-9_]*)`")

// TestDocsCiteRealTests checks that every test the README and docs/*.md name in backquotes (they cite
// tests as the proof of what they say) is a test function of the repository: a renamed or deleted
// test leaves the docs claiming a proof that no longer runs.
func TestDocsCiteRealTests(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "README.md"), filepath.Join(root, "bench", "results", "README.md"))
	funcs := map[string]bool{}
	testFunc := regexp.MustCompile(`(?m)^func ((?:Test|Example|Benchmark|Fuzz)[A-Za-z0-9_]*)\(`)
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, "_test.go"):
			return nil
		}
		src, err := os.ReadFile(path)
		for _, m := range testFunc.FindAllSubmatch(src, -1) {
			funcs[string(m[1])] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !funcs["TestDocsCiteRealTests"] {
		t.Fatal("the walk missed this very test: it reads no test file")
	}
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range citedTest.FindAllSubmatch(text, -1) {
			if name := string(m[1]); !funcs[name] {
				rel, _ := filepath.Rel(root, doc)
				t.Errorf("%s cites %s, which no test file declares", rel, name)
			}
		}
	}
}
