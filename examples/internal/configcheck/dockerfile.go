package configcheck

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// checkDockerfile checks that the build stage of the Dockerfile at path (relative to root, the repository
// root and the image's build context) builds its binary from exactly the files it copies: the sources
// its COPY lines name are copied into an empty directory, and the `go build` of its RUN line runs there
// against the module cache only (GOPROXY=off, GOFLAGS=-mod=readonly). A package the binary imports but
// the Dockerfile does not copy fails the test, as it would fail `docker build`.
func checkDockerfile(t *testing.T, root, path string) {
	t.Helper()
	copies, pkg, err := buildStage(filepath.Join(root, path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	dir := t.TempDir()
	for _, src := range copies {
		if err := copyTree(filepath.Join(root, src), filepath.Join(dir, src)); err != nil {
			t.Fatalf("%s: COPY %s: %v", path, src, err)
		}
	}
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", os.DevNull, pkg)
	cmd.Dir = dir
	// The build settings of `go test` (not the image's CGO_ENABLED=0), so that the build cache serves it.
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: the build stage does not build from the files it copies (go build %s: %v):\n%s\n"+
			"add the missing packages to its COPY lines", path, pkg, err, out)
	}
}

// buildStage reads the first stage of a Dockerfile: the sources of its COPY lines (relative to the
// build context) and the package its `go build` builds.
func buildStage(path string) (copies []string, pkg string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	stages := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			stages++
		case "COPY":
			if stages == 1 && len(fields) >= 3 && !strings.HasPrefix(fields[1], "--") {
				copies = append(copies, fields[1:len(fields)-1]...)
			}
		case "RUN":
			if stages == 1 && strings.Contains(sc.Text(), "go build") {
				pkg = fields[len(fields)-1]
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, "", err
	}
	if pkg == "" || len(copies) == 0 {
		return nil, "", fmt.Errorf("no COPY and go build in the first stage")
	}
	return copies, pkg, nil
}

// copyTree copies the file or directory src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
