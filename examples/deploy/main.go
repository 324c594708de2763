package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/convergo-dev/convergo/examples/internal/deploy"
)

// demoKubeconfig is where `make demo` (examples/demo, run directory demo-run) writes the admin
// kubeconfig of its cluster, relative to the repository root.
var demoKubeconfig = filepath.Join("demo-run", "cluster", "kubeconfig")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("deploy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts deploy.Options
	fs.StringVar(&opts.Kubeconfig, "kubeconfig", "", "Kubeconfig of the cluster (default: the local cluster of `make demo ARGS=--keep`, "+demoKubeconfig+").")
	fs.StringVar(&opts.SampleNamespace, "namespace", "default", "Namespace of the samples (config/samples); it must exist.")
	fs.StringVar(&opts.Image, "image", "", "Operator image for the Deployment (default: the one config/manager sets).")
	fs.StringVar(&opts.RunDir, "run-dir", "", "Directory of the local operator's binary, kubeconfig, log and process ID (default: deploy-run/<example>).")
	fs.DurationVar(&opts.Timeout, "timeout", 3*time.Minute, "How long each wait may take.")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: deploy [flags] deploy|undeploy <example>\n\n"+
			"Deploys an example operator (examples/<example>/config/default, then config/samples) or removes it.\n"+
			"On the local cluster the operator runs from the built binary as a local process, not from an image.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 2 || (fs.Arg(0) != "deploy" && fs.Arg(0) != "undeploy") {
		fmt.Fprintf(stderr, "deploy: want deploy or undeploy and an example, e.g. `deploy welcome`; got %q\n", fs.Args())
		return 2
	}
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintf(stderr, "deploy: %v\n", err)
		return 1
	}
	opts.Root = root
	opts.Example = fs.Arg(1)
	if _, err := os.Stat(filepath.Join(root, "examples", opts.Example, "config", "default")); err != nil {
		fmt.Fprintf(stderr, "deploy: no example %q: examples/%s/config/default: %v\n", opts.Example, opts.Example, err)
		return 2
	}
	if opts.Kubeconfig == "" {
		opts.Kubeconfig = filepath.Join(root, demoKubeconfig)
	}
	opts.Out = stdout

	f := deploy.Deploy
	if fs.Arg(0) == "undeploy" {
		f = deploy.Undeploy
	}
	if err := f(ctx, opts); err != nil {
		fmt.Fprintf(stderr, "deploy: %s %s: %v\n", fs.Arg(0), opts.Example, err)
		return 1
	}
	return 0
}

// moduleRoot returns the repository root: the closest directory above the working directory whose
// go.mod declares the Convergo module.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the repository root: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/convergo-dev/convergo\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find the repository root: run deploy inside the Convergo repository (make deploy)")
		}
		dir = parent
	}
}
