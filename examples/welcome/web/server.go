package main

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
)

// config is what the server needs to know, read from the environment by main.
type config struct {
	// Name is the user to greet.
	Name string
	// PageFile is an HTML fragment shown under the greeting (the Welcome operator mounts it from a
	// ConfigMap). It is read on every request and never written; a missing file shows the greeting alone.
	PageFile string
	// Password protects /private/; empty disables the private page.
	Password string
}

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><title>Hello {{.Name}}</title></head>
<body>
<h1>Hello {{.Name}}</h1>
{{.Page}}
</body>
</html>
`))

// newServer returns the site's handler: /hello/ greets, /private/ asks for the password, /healthz answers
// probes.
func newServer(cfg config, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /hello/", func(w http.ResponseWriter, r *http.Request) {
		page, err := readPage(cfg.PageFile)
		if err != nil {
			log.Error("read page", "file", cfg.PageFile, "error", err)
			http.Error(w, "page unavailable", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		data := struct {
			Name string
			Page template.HTML
		}{Name: cfg.Name, Page: page}
		if err := pageTemplate.Execute(w, data); err != nil {
			log.Error("render page", "error", err)
		}
	})
	mux.HandleFunc("GET /private/", func(w http.ResponseWriter, r *http.Request) {
		if cfg.Password == "" {
			http.NotFound(w, r)
			return
		}
		_, password, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(password), []byte(cfg.Password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="welcome", charset="UTF-8"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "Welcome back, %s\n", cfg.Name)
	})
	return mux
}

// readPage returns the HTML fragment in file, or nothing when there is no such file.
// The fragment is trusted: the operator writes it with every user value escaped.
func readPage(file string) (template.HTML, error) {
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", file, err)
	}
	return template.HTML(b), nil // #nosec G203 -- written by the operator with escaped values.
}
