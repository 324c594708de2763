package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/convergo-dev/convergo/testing/assets"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("convergo-assets", flag.ContinueOnError)
	fs.SetOutput(stderr)
	components := fs.String("components", "kube-apiserver,etcd", "comma-separated components to provide (kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kwok, kubectl), or all")
	printMode := fs.String("print", "dir", "what to print: dir (the directory) or env (an export KUBEBUILDER_ASSETS=... line)")
	cacheDir := fs.String("cache-dir", "", "cache directory for built binaries (default: the user cache directory)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: convergo-assets [-components list|all] [-print dir|env] [-cache-dir dir]\n\n"+
			"Locates or builds (from the Go module proxy) the Kubernetes %s control-plane binaries and kubectl.\n\n", assets.KubernetesVersion)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "convergo-assets: unexpected arguments %q\n", fs.Args())
		return 2
	}
	comps, err := assets.ParseComponents(*components)
	if err != nil {
		fmt.Fprintf(stderr, "convergo-assets: -components: %v\n", err)
		return 2
	}
	if *printMode != "dir" && *printMode != "env" {
		fmt.Fprintf(stderr, "convergo-assets: -print must be dir or env, not %q\n", *printMode)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := []assets.Option{assets.WithComponents(comps...), assets.WithProgress(stderr)}
	if *cacheDir != "" {
		opts = append(opts, assets.WithCacheDir(*cacheDir))
	}
	dir, err := assets.Ensure(ctx, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "convergo-assets: %v\n", err)
		return 1
	}
	if *printMode == "env" {
		fmt.Fprintf(stdout, "export %s=%s\n", assets.EnvAssets, shellQuote(dir))
	} else {
		fmt.Fprintln(stdout, dir)
	}
	return 0
}

// shellQuote quotes s for POSIX shells.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
