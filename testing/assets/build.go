package assets

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Module paths and build recipes.
const (
	kubernetesModule = "k8s.io/kubernetes"
	etcdModule       = "go.etcd.io/etcd/server/v3"
	kwokModule       = "sigs.k8s.io/kwok"
	jaegerModule     = "github.com/jaegertracing/jaeger"
	goDirective      = "1.26.0"
)

// kwokStageFiles are the stage definitions shipped in the kwok module, relative to its root, that make
// fake nodes Ready, keep their leases fresh, and run pods through Ready, Complete and deletion.
var kwokStageFiles = []string{
	"kustomize/stage/node/fast/node-initialize.yaml",
	"kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"kustomize/stage/pod/fast/pod-ready.yaml",
	"kustomize/stage/pod/fast/pod-complete.yaml",
	"kustomize/stage/pod/fast/pod-delete.yaml",
}

// builder runs the go command for builds into one cache directory.
type builder struct {
	cacheDir string
	progress io.Writer
	missing  []Component // for error messages

	once    sync.Once
	initErr error
	goBin   string
	goproxy string
	env     []string

	k8sModuleDir string // prepared throwaway module for k8s.io/kubernetes, "" until prepared
}

// noGoError is returned when no go command is found.
func noGoError(err error, missing []Component) error {
	return fmt.Errorf("building %s needs the go command, and none is in PATH (%w): install Go %s+ or set %s=<directory holding %s>",
		joinComponents(missing), err, strings.TrimSuffix(goDirective, ".0"), EnvAssets, joinComponents(missing))
}

func (b *builder) init(ctx context.Context) error {
	b.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			b.initErr = noGoError(err, b.missing)
			return
		}
		b.goBin = goBin
		// Keep the user's effective GOFLAGS (an environment variable replaces the go env file's value) and
		// add -mod=mod; GOWORK=off keeps a surrounding workspace out of the throwaway modules.
		out, err := exec.CommandContext(ctx, goBin, "env", "GOFLAGS", "GOPROXY").Output()
		if err != nil {
			b.initErr = fmt.Errorf("run go env: %w", err)
			return
		}
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		for len(lines) < 2 {
			lines = append(lines, "")
		}
		goflags := strings.TrimSpace(lines[0] + " -mod=mod")
		b.goproxy = lines[1]
		b.env = append(os.Environ(), "GOWORK=off", "GOFLAGS="+goflags)
	})
	return b.initErr
}

// goCmd runs the go command in dir. Its stderr goes to the progress writer; on failure the error holds
// the stderr tail. With fetches, a failure also names GOPROXY, since the usual cause is an unreachable
// module proxy.
func (b *builder) goCmd(ctx context.Context, dir string, fetches bool, args ...string) ([]byte, error) {
	if err := b.init(ctx); err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, b.goBin, args...)
	cmd.Dir = dir
	cmd.Env = b.env
	cmd.Stdout = &stdout
	cmd.Stderr = io.MultiWriter(&stderr, &prefixWriter{w: b.progress, prefix: "convergo-assets:   "})
	if err := cmd.Run(); err != nil {
		name := "go " + strings.Join(args, " ")
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", name, ctx.Err())
		}
		if fetches {
			return nil, fmt.Errorf("%s (in %s) failed; is the Go module proxy reachable? GOPROXY=%s: %w\n%s",
				name, dir, b.goproxy, err, tail(stderr.String(), 15))
		}
		return nil, fmt.Errorf("%s (in %s): %w\n%s", name, dir, err, tail(stderr.String(), 15))
	}
	return stdout.Bytes(), nil
}

// moduleInfo is the part of `go mod download -json` output we use.
type moduleInfo struct {
	Path    string
	Version string
	Error   string
	Dir     string
	GoMod   string
}

func (b *builder) download(ctx context.Context, dir, module, version string) (moduleInfo, error) {
	out, err := b.goCmd(ctx, dir, true, "mod", "download", "-json", module+"@"+version)
	var info moduleInfo
	if jerr := json.Unmarshal(out, &info); jerr == nil && info.Error != "" {
		return info, fmt.Errorf("download %s@%s (GOPROXY=%s): %s", module, version, b.goproxy, info.Error)
	}
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return info, fmt.Errorf("parse go mod download output for %s@%s: %w", module, version, err)
	}
	return info, nil
}

// prepareModule writes a throwaway module (go.mod and a tools.go importing the packages to build) into
// dir and runs go mod tidy, unless dir already holds exactly that module.
func (b *builder) prepareModule(ctx context.Context, dir string, gomod []byte, imports []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create build module: %w", err)
	}
	var tools strings.Builder
	tools.WriteString("//go:build tools\n\n// Package tools makes go mod tidy keep the modules of the binaries built here.\npackage tools\n\nimport (\n")
	for _, imp := range imports {
		fmt.Fprintf(&tools, "\t_ %q\n", imp)
	}
	tools.WriteString(")\n")
	stamp := append(append([]byte(nil), gomod...), tools.String()...)
	stampPath := filepath.Join(dir, ".prepared")
	if old, err := os.ReadFile(stampPath); err == nil && bytes.Equal(old, stamp) && isFile(filepath.Join(dir, "go.sum")) {
		return nil
	}
	_ = os.Remove(stampPath)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), gomod, 0o644); err != nil {
		return fmt.Errorf("write build module: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tools.go"), []byte(tools.String()), 0o644); err != nil {
		return fmt.Errorf("write build module: %w", err)
	}
	progressf(b.progress, "resolving modules in %s", dir)
	if _, err := b.goCmd(ctx, dir, true, "mod", "tidy"); err != nil {
		return err
	}
	if err := os.WriteFile(stampPath, stamp, 0o644); err != nil {
		return fmt.Errorf("write build module: %w", err)
	}
	return nil
}

// buildComponent is the real build of one component into dst.
func buildComponent(ctx context.Context, b *builder, c Component, dst string) error {
	switch c {
	case KubeAPIServer, KubeControllerManager, KubeScheduler, Kubectl:
		return b.buildKubernetes(ctx, c, dst)
	case Etcd:
		return b.buildEtcd(ctx, dst)
	case Kwok:
		return b.buildKwok(ctx, dst)
	case Jaeger:
		return b.buildJaeger(ctx, dst)
	}
	return fmt.Errorf("unknown component %q", c)
}

func (b *builder) buildKubernetes(ctx context.Context, c Component, dst string) error {
	dir := filepath.Join(b.cacheDir, "build", "kubernetes")
	if b.k8sModuleDir == "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create build module: %w", err)
		}
		info, err := b.download(ctx, dir, kubernetesModule, KubernetesVersion)
		if err != nil {
			return err
		}
		upstream, err := os.ReadFile(info.GoMod)
		if err != nil {
			return fmt.Errorf("read go.mod of %s@%s: %w", kubernetesModule, KubernetesVersion, err)
		}
		gomod, err := kubernetesBuildGoMod(upstream, KubernetesVersion)
		if err != nil {
			return err
		}
		if err := b.prepareModule(ctx, dir, gomod, kubernetesImports()); err != nil {
			return err
		}
		b.k8sModuleDir = dir
	}
	_, err := b.goCmd(ctx, dir, true, "build", "-ldflags", kubernetesLDFlags(KubernetesVersion), "-o", dst, kubernetesModule+"/cmd/"+string(c))
	return err
}

// kubernetesImports are the packages the throwaway module of k8s.io/kubernetes builds: every
// Kubernetes component's cmd package, whichever are requested, so that the module (and its .prepared
// stamp) is the same for every build.
func kubernetesImports() []string {
	var imports []string
	for _, c := range []Component{KubeAPIServer, KubeControllerManager, KubeScheduler, Kubectl} {
		imports = append(imports, kubernetesModule+"/cmd/"+string(c))
	}
	return imports
}

// kubernetesLDFlags stamps the version into a Kubernetes binary, as the release build does (both
// k8s.io/component-base/version, which the components and kubectl report, and
// k8s.io/client-go/pkg/version, which client-go's user agent reports), so that anything parsing it sees
// the real version instead of v0.0.0-master.
func kubernetesLDFlags(version string) string {
	major, minor := "", ""
	parts := strings.Split(strings.TrimPrefix(version, "v"), ".")
	if len(parts) >= 2 {
		major, minor = parts[0], parts[1]
	}
	var flags []string
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags, fmt.Sprintf("-X %s.gitVersion=%s -X %s.gitMajor=%s -X %s.gitMinor=%s", pkg, version, pkg, major, pkg, minor))
	}
	return strings.Join(flags, " ")
}

func (b *builder) buildEtcd(ctx context.Context, dst string) error {
	dir := filepath.Join(b.cacheDir, "build", "etcd")
	gomod := fmt.Sprintf("module convergo.local/etcdbuild\n\ngo %s\n\nrequire %s %s\n", goDirective, etcdModule, EtcdVersion)
	if err := b.prepareModule(ctx, dir, []byte(gomod), []string{etcdModule}); err != nil {
		return err
	}
	_, err := b.goCmd(ctx, dir, true, "build", "-o", dst, etcdModule)
	return err
}

func (b *builder) buildKwok(ctx context.Context, dst string) error {
	dir := filepath.Join(b.cacheDir, "build", "kwok")
	gomod := fmt.Sprintf("module convergo.local/kwokbuild\n\ngo %s\n\nrequire %s %s\n", goDirective, kwokModule, KwokVersion)
	if err := b.prepareModule(ctx, dir, []byte(gomod), []string{kwokModule + "/cmd/kwok"}); err != nil {
		return err
	}
	if _, err := b.goCmd(ctx, dir, true, "build", "-o", dst, kwokModule+"/cmd/kwok"); err != nil {
		return err
	}
	info, err := b.download(ctx, dir, kwokModule, KwokVersion)
	if err != nil {
		return err
	}
	stages, err := kwokStages(info.Dir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(stagesTmpPath(filepath.Dir(dst)), stages, 0o644); err != nil {
		return fmt.Errorf("write kwok stages: %w", err)
	}
	return nil
}

// buildJaeger builds cmd/jaeger inside its own downloaded module, with the module's go.sum and
// replace directives (as a dependency of a throwaway module, go ignores its replace directives and
// the build fails); -mod=readonly on the command line keeps the module cache untouched whatever
// GOFLAGS says. The version is stamped as Jaeger's release build does.
func (b *builder) buildJaeger(ctx context.Context, dst string) error {
	dir := filepath.Join(b.cacheDir, "build", "jaeger")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create build directory: %w", err)
	}
	info, err := b.download(ctx, dir, jaegerModule, JaegerVersion)
	if err != nil {
		return err
	}
	ldflags := "-X " + jaegerModule + "/internal/version.latestVersion=" + JaegerVersion
	_, err = b.goCmd(ctx, info.Dir, true, "build", "-mod=readonly", "-ldflags", ldflags, "-o", dst, "./cmd/jaeger")
	return err
}

// stagesTmpPath is where a kwok build leaves the stage file before it is renamed into place.
func stagesTmpPath(dir string) string {
	return filepath.Join(dir, "."+KwokStagesFile+".tmp")
}

// kwokStages concatenates the stage files of the kwok module in moduleDir into one multi-document YAML.
func kwokStages(moduleDir string) ([]byte, error) {
	var out bytes.Buffer
	for i, rel := range kwokStageFiles {
		data, err := os.ReadFile(filepath.Join(moduleDir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("read kwok stage %s: %w", rel, err)
		}
		doc := strings.TrimSpace(string(data))
		doc = strings.TrimPrefix(doc, "---")
		if i > 0 {
			out.WriteString("---\n")
		}
		out.WriteString(strings.TrimLeft(doc, "\n"))
		out.WriteString("\n")
	}
	return out.Bytes(), nil
}

// kubernetesBuildGoMod returns the go.mod of the throwaway module that builds k8s.io/kubernetes at
// version: it requires k8s.io/kubernetes and, because k8s.io/kubernetes points its staging modules at
// local directories that do not exist in the module zip, replaces every one of them (as listed in
// upstream, the go.mod of k8s.io/kubernetes) with the published staging module of the matching v0 version.
func kubernetesBuildGoMod(upstream []byte, version string) ([]byte, error) {
	staging := "v0" + strings.TrimPrefix(version, "v1")
	if !strings.HasPrefix(version, "v1.") {
		return nil, fmt.Errorf("unsupported kubernetes version %q", version)
	}
	mods, err := stagingModules(upstream)
	if err != nil {
		return nil, err
	}
	if len(mods) == 0 {
		return nil, errors.New("go.mod of k8s.io/kubernetes has no staging replace directives")
	}
	var out strings.Builder
	fmt.Fprintf(&out, "module convergo.local/k8sbuild\n\ngo %s\n\nrequire %s %s\n\nreplace (\n", goDirective, kubernetesModule, version)
	for _, m := range mods {
		fmt.Fprintf(&out, "\t%s => %s %s\n", m, m, staging)
	}
	out.WriteString(")\n")
	return []byte(out.String()), nil
}

// stagingModules returns, in order, the k8s.io modules that gomod replaces with a ./staging/ directory,
// from both replace blocks and single-line replace directives.
func stagingModules(gomod []byte) ([]string, error) {
	var mods []string
	inBlock := false
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case line == "":
			continue
		case inBlock && line == ")":
			inBlock = false
			continue
		case !inBlock && (line == "replace (" || line == "replace("):
			inBlock = true
			continue
		case !inBlock && strings.HasPrefix(line, "replace "):
			line = strings.TrimSpace(strings.TrimPrefix(line, "replace "))
		case !inBlock:
			continue
		}
		lhs, rhs, ok := strings.Cut(line, "=>")
		if !ok {
			return nil, fmt.Errorf("parse go.mod replace directive %q", line)
		}
		lf := strings.Fields(lhs)
		rf := strings.Fields(rhs)
		if len(lf) == 0 || len(rf) == 0 {
			return nil, fmt.Errorf("parse go.mod replace directive %q", line)
		}
		if strings.HasPrefix(lf[0], "k8s.io/") && strings.HasPrefix(rf[0], "./staging/") {
			mods = append(mods, lf[0])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read go.mod: %w", err)
	}
	return mods, nil
}

// prefixWriter writes each line it receives to w with a prefix.
type prefixWriter struct {
	w       io.Writer
	prefix  string
	pending []byte
}

// Write implements io.Writer.
func (p *prefixWriter) Write(b []byte) (int, error) {
	p.pending = append(p.pending, b...)
	for {
		i := bytes.IndexByte(p.pending, '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.pending[:i])
		p.pending = p.pending[i+1:]
	}
	return len(b), nil
}
