package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	var opts options
	flag.BoolVar(&opts.keep, "keep", false, "Keep the cluster and the operators running after the demo, until interrupted.")
	flag.IntVar(&opts.nodes, "nodes", 3, "Number of fake (kwok) nodes.")
	flag.DurationVar(&opts.timeout, "timeout", 3*time.Minute, "How long each step may take.")
	flag.StringVar(&opts.runDir, "run-dir", "demo-run", "Directory for the cluster's files and the operators' log (relative paths start at the repository root).")
	flag.BoolVar(&opts.servePage, "serve-page", false, "Serve the Welcome's page on this machine: the web server runs as a local process with the configuration the operator rendered, and follows a rename of the Welcome (with --keep, until interrupted).")
	flag.BoolVar(&opts.traces, "traces", true, "Send the operators' traces (OpenTelemetry, and their API requests') to a private Jaeger, print the span tree of one reconcile and where to query the others.")
	flag.Func("page-port", "The local port of --serve-page; 0 picks a free one (default: the port the operator rendered, the Welcome's spec.port).", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 65535 {
			return fmt.Errorf("%q is not a TCP port: give a number from 0 (any free port) to 65535", s)
		}
		opts.pagePort = &n
		return nil
	})
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
