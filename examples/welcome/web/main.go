package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Getenv, log, nil); err != nil {
		log.Error("web server failed", "error", err)
		os.Exit(1)
	}
}

// run serves until ctx is done. ready, when not nil, receives the listener's address once it listens.
func run(ctx context.Context, getenv func(string) string, log *slog.Logger, ready chan<- net.Addr) error {
	cfg, port, err := configFromEnv(getenv)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("", port))
	if err != nil {
		return fmt.Errorf("listen on port %s: %w", port, err)
	}
	srv := &http.Server{
		Handler:           newServer(cfg, log),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("serving", "address", ln.Addr().String(), "name", cfg.Name, "privatePage", cfg.Password != "")
	if ready != nil {
		ready <- ln.Addr()
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// configFromEnv reads the configuration and the port from the environment.
func configFromEnv(getenv func(string) string) (config, string, error) {
	cfg := config{
		Name:     getenv("NAME"),
		PageFile: getenv("PAGE_FILE"),
		Password: getenv("PASSWORD"),
	}
	if cfg.Name == "" {
		return config{}, "", errors.New("NAME is not set")
	}
	if cfg.PageFile == "" {
		cfg.PageFile = "/etc/welcome/page.html"
	}
	port := getenv("PORT")
	if port == "" {
		port = "8088"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return config{}, "", fmt.Errorf("PORT %q is not a TCP port", port)
	}
	return cfg, port, nil
}
