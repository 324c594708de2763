package gencheck

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ControllerGenVersion is the controller-gen release the Makefile pins.
const ControllerGenVersion = "v0.23.0"

// check regenerates the deepcopy code, the CRDs, the RBAC role and (with a config/webhook) the webhook
// configurations of examples/<example> with the pinned controller-gen, the way `make generate
// manifests` does, and fails t for every committed file that differs, is missing or is left over.
func check(t *testing.T, example string) {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin", "controller-gen-"+ControllerGenVersion)
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("controller-gen %s is not installed at %s (run `make tools`; `make test` installs it): %v", ControllerGenVersion, bin, err)
	}
	exDir := filepath.Join("examples", example)
	fix := "run `make generate manifests` and commit the result"

	// Deepcopy code: one zz_generated.deepcopy.go per API package, printed to stdout.
	apiDirs, err := packagesWith(filepath.Join(root, exDir, "api"), "zz_generated.deepcopy.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(apiDirs) == 0 {
		t.Errorf("no zz_generated.deepcopy.go under %s/api: %s", exDir, fix)
	}
	for _, dir := range apiDirs {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		got := run(t, root, bin, "object", "paths=./"+filepath.ToSlash(rel), "output:object:stdout")
		compareFile(t, filepath.Join(dir, "zz_generated.deepcopy.go"), got, fix)
	}

	// CRDs and RBAC: generated into temporary directories, compared file by file.
	crdDir := t.TempDir()
	run(t, root, bin, "crd", "paths=./"+filepath.ToSlash(exDir)+"/api/...", "output:crd:artifacts:config="+crdDir)
	compareDir(t, crdDir, filepath.Join(root, exDir, "config", "crd", "bases"), fix)

	rbacDir := t.TempDir()
	run(t, root, bin, "rbac:roleName="+example+"-manager-role", "paths=./"+filepath.ToSlash(exDir)+"/...", "output:rbac:artifacts:config="+rbacDir)
	generated, err := os.ReadFile(filepath.Join(rbacDir, "role.yaml"))
	if err != nil {
		t.Fatalf("controller-gen rbac wrote no role.yaml: %v", err)
	}
	compareFile(t, filepath.Join(root, exDir, "config", "rbac", "role.yaml"), generated, fix)

	// Webhook configurations, for an example with a config/webhook.
	webhookConfig := filepath.Join(root, exDir, "config", "webhook")
	if _, err := os.Stat(webhookConfig); err == nil {
		webhookDir := t.TempDir()
		run(t, root, bin, "webhook", "paths=./"+filepath.ToSlash(exDir)+"/...", "output:webhook:artifacts:config="+webhookDir)
		generated, err := os.ReadFile(filepath.Join(webhookDir, "manifests.yaml"))
		if err != nil {
			t.Fatalf("controller-gen webhook wrote no manifests.yaml: %v", err)
		}
		compareFile(t, filepath.Join(webhookConfig, "manifests.yaml"), generated, fix)
	}
}

// run runs controller-gen in the module root and returns its standard output.
func run(t *testing.T, root, bin string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("controller-gen %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// compareFile fails t when the committed file does not hold want.
func compareFile(t *testing.T, committed string, want []byte, fix string) {
	t.Helper()
	got, err := os.ReadFile(committed)
	if err != nil {
		t.Errorf("read generated file: %v: %s", err, fix)
		return
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s is stale: %s (-generated +committed):\n%s", committed, fix, diff)
	}
}

// compareDir fails t for every file that differs between the generated and committed directories.
func compareDir(t *testing.T, generated, committed string, fix string) {
	t.Helper()
	want, err := yamlFiles(generated)
	if err != nil {
		t.Fatal(err)
	}
	got, err := yamlFiles(committed)
	if err != nil {
		t.Errorf("%v: %s", err, fix)
		return
	}
	for _, name := range want {
		b, err := os.ReadFile(filepath.Join(generated, name))
		if err != nil {
			t.Fatal(err)
		}
		compareFile(t, filepath.Join(committed, name), b, fix)
	}
	for _, name := range got {
		if !slices.Contains(want, name) {
			t.Errorf("%s is not generated any more: delete it (%s)", filepath.Join(committed, name), fix)
		}
	}
}

// yamlFiles lists the YAML files of dir, sorted.
func yamlFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".yaml") {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// packagesWith returns the directories under dir that hold a file named name.
func packagesWith(dir, name string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == name {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find %s under %s: %w", name, dir, err)
	}
	return dirs, nil
}

// moduleRoot returns the closest directory above the working directory that holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find the module root: no go.mod above the working directory")
		}
		dir = parent
	}
}
