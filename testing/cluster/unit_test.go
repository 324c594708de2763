package cluster

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/clientcmd"
)

func TestMissingBinaries(t *testing.T) {
	allBinaries := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}
	cases := map[string]struct {
		env     string   // KUBEBUILDER_ASSETS
		present []string // files created in the binary dir
		opts    func(dir string) []Option
		wantDir bool     // the error names the directory
		want    []string // MissingBinariesError.Missing
		msg     []string // substrings of the message
	}{
		"no directory configured": {
			opts: func(string) []Option { return nil },
			msg:  []string{"KUBEBUILDER_ASSETS is not set", buildCommand},
		},
		"empty directory from the environment": {
			env:     "<dir>",
			opts:    func(string) []Option { return nil },
			wantDir: true,
			want:    append(allBinaries, StagesFile),
			msg:     []string{"control-plane binaries missing in", "etcd, kube-apiserver", buildCommand},
		},
		"option wins over the environment": {
			env:     "/nonexistent/convergo-assets",
			present: []string{"etcd", "kube-apiserver"},
			opts:    func(dir string) []Option { return []Option{WithBinaryDir(dir)} },
			wantDir: true,
			want:    []string{"kube-controller-manager", "kube-scheduler", "kwok", StagesFile},
		},
		"scheduler not needed without scheduler": {
			present: []string{"etcd", "kube-apiserver", "kube-controller-manager", "kwok"},
			opts: func(dir string) []Option {
				return []Option{WithBinaryDir(dir), WithoutScheduler(), WithStagesFile(filepath.Join(dir, "none.yaml"))}
			},
			wantDir: true,
			want:    []string{"<dir>/none.yaml"},
		},
		"non-executable binary counts as missing": {
			present: []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok.txt", StagesFile},
			opts:    func(dir string) []Option { return []Option{WithBinaryDir(dir)} },
			wantDir: true,
			want:    []string{"kwok"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.present {
				mode := os.FileMode(0o755)
				if f == StagesFile || strings.HasSuffix(f, ".txt") {
					mode = 0o644
				}
				if err := os.WriteFile(filepath.Join(dir, strings.TrimSuffix(f, ".txt")), []byte("x"), mode); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv(BinaryDirEnv, strings.ReplaceAll(tc.env, "<dir>", dir))

			c, err := Start(t.Context(), tc.opts(dir)...)
			if err == nil {
				c.Stop()
				t.Fatal("Start succeeded, want a MissingBinariesError")
			}
			var mbe *MissingBinariesError
			if !errors.As(err, &mbe) {
				t.Fatalf("Start error %v (%T) is not a *MissingBinariesError", err, err)
			}
			var want []string
			for _, w := range tc.want {
				want = append(want, strings.ReplaceAll(w, "<dir>", dir))
			}
			if diff := cmp.Diff(want, mbe.Missing); diff != "" {
				t.Errorf("missing files (-want +got):\n%s", diff)
			}
			if got := mbe.Dir != ""; got != tc.wantDir {
				t.Errorf("error names a directory = %v (%q), want %v", got, mbe.Dir, tc.wantDir)
			}
			for _, s := range tc.msg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}

func TestNegativeNodes(t *testing.T) {
	if _, err := Start(t.Context(), WithNodes(-1), WithBinaryDir(t.TempDir())); err == nil || !strings.Contains(err.Error(), "negative node count") {
		t.Fatalf("Start(WithNodes(-1)) error = %v, want a negative node count error", err)
	}
}

func TestPKI(t *testing.T) {
	p, err := newPKI()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(p.ca.cert)

	type summary struct {
		CN       string
		O        []string
		DNSNames []string
		IPs      []string
	}
	server := x509.ExtKeyUsageServerAuth
	client := x509.ExtKeyUsageClientAuth
	cases := map[string]struct {
		kp    *keyPair
		usage x509.ExtKeyUsage
		want  summary
	}{
		"apiserver serving": {p.apiServer, server, summary{
			CN:       "kube-apiserver",
			DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			IPs:      []string{"127.0.0.1", "10.96.0.1"},
		}},
		"component serving": {p.componentServing, server, summary{
			CN: "convergo-cluster-components", DNSNames: []string{"localhost"}, IPs: []string{"127.0.0.1"},
		}},
		"admin":              {p.admin, client, summary{CN: "convergo-admin", O: []string{"system:masters"}}},
		"controller-manager": {p.controllerManager, client, summary{CN: "system:kube-controller-manager", O: []string{"system:masters"}}},
		"scheduler":          {p.scheduler, client, summary{CN: "system:kube-scheduler"}},
		"kwok":               {p.kwok, client, summary{CN: "kwok-controller", O: []string{"system:masters"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := tc.kp.cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{tc.usage}}); err != nil {
				t.Errorf("certificate does not verify against the CA for %v: %v", tc.usage, err)
			}
			got := summary{CN: tc.kp.cert.Subject.CommonName, O: tc.kp.cert.Subject.Organization, DNSNames: tc.kp.cert.DNSNames}
			for _, ip := range tc.kp.cert.IPAddresses {
				got.IPs = append(got.IPs, ip.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("certificate (-want +got):\n%s", diff)
			}
			if tc.usage == server {
				for _, host := range append(tc.want.DNSNames, tc.want.IPs...) {
					if err := tc.kp.cert.VerifyHostname(host); err != nil {
						t.Errorf("VerifyHostname(%q): %v", host, err)
					}
				}
			}
		})
	}
	if got := p.serviceAccountKey.N.BitLen(); got != 2048 {
		t.Errorf("service-account key has %d bits, want 2048", got)
	}
}

func TestPKIFilesAndKubeconfig(t *testing.T) {
	p, err := newPKI()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := p.write(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{files.caCert, files.caKey, files.apiServerCert, files.apiServerKey,
		files.componentServingCert, files.componentServingKey, files.serviceAccountKey, files.serviceAccountPub} {
		info, err := os.Stat(path)
		if err != nil {
			t.Errorf("stat %s: %v", path, err)
			continue
		}
		if strings.HasSuffix(path, ".key") && info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", filepath.Base(path), info.Mode().Perm())
		}
	}

	path := filepath.Join(dir, "admin.kubeconfig")
	if err := writeKubeconfig(path, "https://127.0.0.1:6443", p.ca.certPEM, "admin", p.admin); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("load written kubeconfig: %v", err)
	}
	got := struct {
		Host          string
		CA, Cert, Key string
	}{cfg.Host, string(cfg.CAData), string(cfg.CertData), string(cfg.KeyData)}
	want := struct {
		Host          string
		CA, Cert, Key string
	}{"https://127.0.0.1:6443", string(p.ca.certPEM), string(p.admin.certPEM), string(p.admin.keyPEM)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kubeconfig as rest config (-want +got):\n%s", diff)
	}
}

func TestTailFile(t *testing.T) {
	long := strings.Repeat("x", 40<<10) // longer than one read chunk
	cases := map[string]struct {
		content string
		n       int
		want    string
	}{
		"empty file":             {"", 3, ""},
		"fewer lines than asked": {"a\nb\n", 5, "a\nb"},
		"last lines":             {"a\nb\nc\nd\n", 2, "c\nd"},
		"no trailing newline":    {"a\nb\nc", 2, "b\nc"},
		"zero lines":             {"a\nb\n", 0, ""},
		"lines across chunks":    {"first\n" + long + "\nlast\n", 2, long + "\nlast"},
		"many short lines":       {strings.Repeat("line\n", 10000) + "end\n", 3, "line\nline\nend"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.log")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := tailFile(path, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("tail (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFormatTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kube-apiserver.log")
	if err := os.WriteFile(path, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "etcd.log")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		path string
		want string
	}{
		"lines":   {path, "==> kube-apiserver.log <==\ntwo\nthree\n"},
		"empty":   {empty, "==> etcd.log <==\n(empty)\n"},
		"missing": {filepath.Join(dir, "kwok.log"), "==> kwok.log <==\n(open log: "},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := formatTail(tc.path, 2)
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("formatTail = %q, want prefix %q", got, tc.want)
			}
		})
	}
}

func TestReservePorts(t *testing.T) {
	p, err := reservePorts()
	if err != nil {
		t.Fatal(err)
	}
	nums := p.numbers()
	seen := map[int]bool{}
	for _, n := range nums {
		if seen[n] {
			t.Errorf("port %d reserved twice in %v", n, nums)
		}
		seen[n] = true
		if _, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(n))); err == nil {
			t.Errorf("port %d can be bound while reserved", n)
		}
	}
	p.releaseAll()
	for _, n := range nums {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(n)))
		if err != nil {
			t.Errorf("port %d not free after release: %v", n, err)
			continue
		}
		l.Close()
	}
}

func TestIsPortConflict(t *testing.T) {
	cases := map[string]struct {
		err  error
		want bool
	}{
		"bind failure in log": {&StartError{Component: Etcd, Err: errors.New("exited"), LogTail: "listen tcp 127.0.0.1:2379: bind: address already in use"}, true},
		"wrapped":             {errors.Join(errors.New("x"), &StartError{Component: APIServer, LogTail: "bind: address already in use"}), true},
		"other failure":       {&StartError{Component: APIServer, LogTail: "unknown flag: --nope"}, false},
		"not a start error":   {errors.New("address already in use"), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := isPortConflict(tc.err); got != tc.want {
				t.Errorf("isPortConflict = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWaitOutlivesKwokCrash starts a stand-in kwok that dies at once on its first run (as kwok v0.8.0
// can, of a data race while it loads its stages) and stays up on the second: waiting for it goes on
// across the restart, and a stand-in for any other component that dies fails the wait.
func TestWaitOutlivesKwokCrash(t *testing.T) {
	cases := map[string]struct {
		comp    Component
		wantErr string
	}{
		"kwok is restarted":        {comp: Kwok},
		"another component is not": {comp: ControllerManager, wantErr: "kube-controller-manager: exited (exit status 2)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			ran := filepath.Join(dir, "ran-once")
			up := filepath.Join(dir, "up")
			script := filepath.Join(dir, "component")
			body := "#!/bin/sh\nif [ ! -e " + ran + " ]; then touch " + ran + "; echo 'fatal error: concurrent map writes'; exit 2; fi\n" +
				"touch " + up + "\nexec sleep 60\n"
			if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
				t.Fatal(err)
			}
			c := &Cluster{cfg: newConfig(nil), RunDir: dir}
			c.bins.paths = map[Component]string{tc.comp: script}
			t.Cleanup(func() { _ = c.stopProcesses(false) })

			p, err := c.launch(tc.comp, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = c.waitFor(t.Context(), p, "its second run", func(context.Context) error {
				_, err := os.Stat(up)
				return err
			})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && !strings.Contains(got, tc.wantErr) {
				t.Fatalf("wait: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
