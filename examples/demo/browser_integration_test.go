//go:build integration

package main

import (
	"bytes"
	"context"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// chromiumFlags run Debian's Chromium headless as root on a machine without a display, a GPU or a
// network beyond loopback: no sandbox (root), and none of the background connections it would try.
var chromiumFlags = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--hide-scrollbars", "--window-size=1024,768",
}

// h1 matches the page's first heading in the DOM Chromium serializes.
var h1 = regexp.MustCompile(`(?s)<h1[^>]*>(.*?)</h1>`)

// openInChromium opens url in headless Chromium, checks that the page it renders greets name, and
// keeps a screenshot in the test's artifact directory (t.ArtifactDir: under -outputdir with
// `go test -artifacts`, as `make test` runs; otherwise a temporary directory, removed after the test).
func openInChromium(ctx context.Context, t *testing.T, url, name string) {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("opening the Welcome page needs headless Chromium (%v): install it with `apt-get install -y chromium` "+
			"(.ci/run does), or leave the browser out with `make test TEST_FLAGS='-skip TestDemo/Chromium'`", err)
	}
	shot := filepath.Join(t.ArtifactDir(), "welcome-"+strings.ToLower(strings.ReplaceAll(name, " ", "-"))+".png")
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a bound on a hung browser, not a measurement
	defer cancel()
	args := append(append([]string{}, chromiumFlags...), "--user-data-dir="+t.TempDir(), "--screenshot="+shot, "--dump-dom", url)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, stderr.String())
	}
	m := h1.FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the page at %s, as Chromium renders it, has no heading:\n%s", url, dom)
	}
	if diff := cmp.Diff("Hello "+name, html.UnescapeString(string(m[1]))); diff != "" {
		t.Errorf("the page at %s, as Chromium renders it, does not greet %s (-want +got):\n%s", url, name, diff)
	}
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot of %s: %v\n%s", url, err, stderr.String())
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("the screenshot %s is not a PNG", shot)
	}
	t.Logf("screenshot of %s: %s", url, shot)
}
