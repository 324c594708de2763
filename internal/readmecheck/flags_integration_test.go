//go:build integration

package readmecheck

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// programs are the commands the docs show with flags, by the way the docs invoke them.
var programs = map[string]string{
	"kubectl convergo": "./cmd/kubectl-convergo",
}

var (
	// fence and span find the code of Markdown: fenced blocks and inline code.
	fence = regexp.MustCompile("(?s)```[a-z]*\n(.*?)```")
	span  = regexp.MustCompile("`([^`\n]+)`")
	// goRun, makeRun and kubectlRun find an invocation in a line of code and what follows it.
	goRun      = regexp.MustCompile(`go run (\./[A-Za-z0-9_./-]+)(.*)`)
	makeRun    = regexp.MustCompile(`\bmake ([a-z][a-z0-9-]*)((?: [a-z][a-z0-9-]*)*)(.*)`)
	kubectlRun = regexp.MustCompile(`(kubectl convergo)(.*)`)
	// argsValue is the ARGS of a make command line: ARGS="..." or ARGS=word.
	argsValue = regexp.MustCompile(`\bARGS=(?:"([^"]*)"|'([^']*)'|(\S+))`)
	// flagToken is a flag as written on a command line; helpFlag one in a program's -h output (the
	// flag package's "  -name type", pflag's "  -n, --name type").
	flagToken = regexp.MustCompile(`^--?([A-Za-z][A-Za-z0-9-]*)`)
	helpFlag  = regexp.MustCompile(`(?m)^\s+(?:-([A-Za-z]), )?--?([A-Za-z][A-Za-z0-9-]*)`)
	// makeTarget is a target of the Makefile; makePerExample the prefix of targets made for each of
	// $(EXAMPLES) (deploy-welcome); makeExamples that list; makeProgram the program a recipe runs with
	// $(ARGS).
	makeTarget     = regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`)
	makePerExample = regexp.MustCompile(`(?m)^\$\(addprefix ([a-z-]+),\$\(EXAMPLES\)\):`)
	makeExamples   = regexp.MustCompile(`(?m)^EXAMPLES\s*:?=\s*(.*)$`)
	makeProgram    = regexp.MustCompile(`\$\(GO\) run (\./\S+) \$\(ARGS\)`)
)

// foreignTargets are make targets the docs cite from other projects' Makefiles.
var foreignTargets = map[string]bool{
	"run": true, // kubebuilder's `make run ENABLE_WEBHOOKS=false`, which examples/README.md explains
}

// everyProgram's flags: asking for help.
var helpFlags = []string{"h", "help"}

// TestDocsCiteRealFlags checks the command lines the README and docs/*.md show in code: every make
// target exists, and every flag given to a program (go run ./..., kubectl convergo, or a make
// target's ARGS) is one the program's -h lists. Each program is built and asked.
func TestDocsCiteRealFlags(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets, targetProgram := makeTargets(string(makefile))
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "README.md"), filepath.Join(root, "examples", "README.md"), filepath.Join(root, "bench", "results", "README.md"))

	type use struct {
		doc, line string
		inv       invocation
	}
	var uses []use
	cited := map[string]bool{} // the programs given flags
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		for _, line := range codeLines(string(text)) {
			for _, c := range invocations(line, targetProgram) {
				if c.target != "" && !targets[c.target] && !foreignTargets[c.target] {
					t.Errorf("%s: %q runs make %s, which the Makefile does not have", rel, line, c.target)
				}
				if c.program == "" || len(c.flags) == 0 {
					continue
				}
				uses = append(uses, use{rel, line, c})
				cited[c.program] = true
			}
		}
	}
	if len(cited) == 0 {
		t.Fatal("the docs show no program with flags: the search is broken")
	}
	known := programFlags(t, root, slices.Sorted(maps.Keys(cited)))
	for _, u := range uses {
		for _, f := range u.inv.flags {
			if !known[u.inv.program][f] {
				t.Errorf("%s: %q gives %s the flag %q, which its -h does not list", u.doc, u.line, u.inv.program, f)
			}
		}
	}
}

// invocation is a command line found in the docs: the make target it runs (if any), the program that
// takes its flags (if any) and the flags.
type invocation struct {
	target, program string
	flags           []string
}

// invocations finds the commands of one line of code.
func invocations(line string, targetProgram map[string]string) []invocation {
	line, _, _ = strings.Cut(line, " #") // a shell comment
	var out []invocation
	if m := goRun.FindStringSubmatch(line); m != nil {
		out = append(out, invocation{program: m[1], flags: flagsIn(m[2])})
	}
	if m := kubectlRun.FindStringSubmatch(line); m != nil {
		out = append(out, invocation{program: programs[m[1]], flags: flagsIn(m[2])})
	}
	if m := makeRun.FindStringSubmatch(line); m != nil {
		inv := invocation{target: m[1]}
		if a := argsValue.FindStringSubmatch(m[3]); a != nil {
			inv.program = targetProgram[m[1]]
			inv.flags = flagsIn(a[1] + a[2] + a[3])
		}
		out = append(out, inv)
		for extra := range strings.FieldsSeq(m[2]) { // make generate manifests
			out = append(out, invocation{target: extra})
		}
	}
	return out
}

// flagsIn returns the flag names in a command line's arguments, up to the end of the command.
func flagsIn(args string) []string {
	var out []string
	for _, f := range strings.Fields(args) {
		if strings.ContainsAny(f, "&|;)") {
			break
		}
		if m := flagToken.FindStringSubmatch(f); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// codeLines returns the lines of the fenced blocks and inline code of a Markdown text.
func codeLines(text string) []string {
	var out []string
	for _, m := range fence.FindAllStringSubmatch(text, -1) {
		out = append(out, strings.Split(m[1], "\n")...)
	}
	outside := fence.ReplaceAllString(text, "")
	for _, m := range span.FindAllStringSubmatch(outside, -1) {
		out = append(out, m[1])
	}
	return out
}

// makeTargets returns the Makefile's targets and, for those whose recipe runs a program with $(ARGS),
// that program.
func makeTargets(makefile string) (map[string]bool, map[string]string) {
	targets, programs := map[string]bool{}, map[string]string{}
	if m := makeExamples.FindStringSubmatch(makefile); m != nil {
		for _, p := range makePerExample.FindAllStringSubmatch(makefile, -1) {
			for ex := range strings.FieldsSeq(m[1]) {
				targets[p[1]+ex] = true
			}
		}
	}
	current := ""
	for line := range strings.Lines(makefile) {
		if m := makeTarget.FindStringSubmatch(line); m != nil {
			current = m[1]
			targets[current] = true
			continue
		}
		if m := makeProgram.FindStringSubmatch(line); m != nil && strings.HasPrefix(line, "\t") {
			programs[current] = m[1]
		}
	}
	return targets, programs
}

// programFlags builds the programs into one directory and returns the flags each one's -h lists.
func programFlags(t *testing.T, root string, pkgs []string) map[string]map[string]bool {
	t.Helper()
	dir := t.TempDir()
	out := map[string]map[string]bool{}
	for _, pkg := range pkgs {
		bin := filepath.Join(dir, strings.ReplaceAll(strings.Trim(pkg, "./"), "/", "_"))
		build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, pkg)
		build.Dir = root
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
		help, _ := exec.CommandContext(t.Context(), bin, "-h").CombinedOutput() // -h exits 0 or 2
		flags := map[string]bool{}
		for _, h := range helpFlags {
			flags[h] = true
		}
		for _, m := range helpFlag.FindAllStringSubmatch(string(help), -1) {
			if m[1] != "" {
				flags[m[1]] = true
			}
			flags[m[2]] = true
		}
		if len(flags) == len(helpFlags) {
			t.Fatalf("%s -h lists no flag:\n%s", pkg, help)
		}
		out[pkg] = flags
	}
	return out
}
