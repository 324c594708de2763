package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	var opts options
	flag.BoolVar(&opts.keep, "keep", false, "Keep the cluster and the operators running after the demo, until interrupted.")
	flag.IntVar(&opts.nodes, "nodes", 3, "Number of fake (kwok) nodes.")
	flag.DurationVar(&opts.timeout, "timeout", 3*time.Minute, "How long each step may take.")
	flag.StringVar(&opts.runDir, "run-dir", "demo-run", "Directory for the cluster's files and the operators' log (relative paths start at the repository root).")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, opts); err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "demo: interrupted")
		} else {
			fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		}
		os.Exit(1)
	}
}
