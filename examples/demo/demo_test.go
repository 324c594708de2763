package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/convergo-dev/convergo/examples/welcome/localweb"
)

func TestInDependencyOrder(t *testing.T) {
	after := map[string][]string{"Deployment/a": nil, "Service/a": nil, "ConfigMap/a": {"Deployment/a"}}
	cases := map[string]struct {
		got     []string
		want    string
		wantErr bool
	}{
		"in order":                   {got: []string{"Deployment/a", "ConfigMap/a", "Service/a"}, want: "Deployment/a, ConfigMap/a, Service/a (ConfigMap/a after Deployment/a)"},
		"independent child first":    {got: []string{"Service/a", "Deployment/a", "ConfigMap/a"}, want: "Service/a, Deployment/a, ConfigMap/a (ConfigMap/a after Deployment/a)"},
		"dependency before its user": {got: []string{"ConfigMap/a", "Deployment/a", "Service/a"}, wantErr: true},
		"missing one":                {got: []string{"Deployment/a", "ConfigMap/a"}, wantErr: true},
		"something else deleted":     {got: []string{"Deployment/a", "ConfigMap/a", "Service/a", "Secret/a"}, wantErr: true},
		"deleted twice":              {got: []string{"Deployment/a", "Deployment/a", "ConfigMap/a", "Service/a"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := inDependencyOrder(tc.got, after)
			if (err != nil) != tc.wantErr {
				t.Fatalf("inDependencyOrder(%v) error = %v, want error %v", tc.got, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("inDependencyOrder(%v) = %q, want %q", tc.got, got, tc.want)
			}
		})
	}
}

// TestDatabaseTeardown checks the order the demo requires of a Database's deletion: the grant and the
// Secret (in either order), then the database, then the role, and the finalizer last.
func TestDatabaseTeardown(t *testing.T) {
	ordered, after, _ := teardown(sampleDatabase())
	if diff := cmp.Diff([]string{"grant to reporting", "Secret/orders-credentials", "database demo_orders", "role demo_orders", "Database/orders"}, ordered); diff != "" {
		t.Errorf("teardown order (-want +got):\n%s", diff)
	}
	cases := map[string]struct {
		got     []string
		wantErr bool
	}{
		"in order":                   {got: ordered},
		"Secret before the grant":    {got: []string{"Secret/orders-credentials", "grant to reporting", "database demo_orders", "role demo_orders", "Database/orders"}},
		"database before the grant":  {got: []string{"database demo_orders", "grant to reporting", "Secret/orders-credentials", "role demo_orders", "Database/orders"}, wantErr: true},
		"database before the Secret": {got: []string{"grant to reporting", "database demo_orders", "Secret/orders-credentials", "role demo_orders", "Database/orders"}, wantErr: true},
		"role before the database":   {got: []string{"grant to reporting", "Secret/orders-credentials", "role demo_orders", "database demo_orders", "Database/orders"}, wantErr: true},
		"finalizer before the role":  {got: []string{"grant to reporting", "Secret/orders-credentials", "database demo_orders", "Database/orders", "role demo_orders"}, wantErr: true},
		"the role never dropped":     {got: []string{"grant to reporting", "Secret/orders-credentials", "database demo_orders", "Database/orders"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := inDependencyOrder(tc.got, after)
			if (err != nil) != tc.wantErr {
				t.Errorf("inDependencyOrder(%v) error = %v, want error %v", tc.got, err, tc.wantErr)
			}
		})
	}
}

// TestLoggedStatements reads the statements out of a piece of PostgreSQL's log, sent by the simple
// and the extended query protocol (a portal's further rows are no statement), and checks their order.
func TestLoggedStatements(t *testing.T) {
	log := `2025-01-02 15:04:05.100 UTC [1234] LOG:  execute <unnamed>: REVOKE ALL ON DATABASE "demo_orders" FROM "reporting"
2025-01-02 15:04:05.110 UTC [1234] LOG:  execute fetch from <unnamed>/C_1: SELECT 1
2025-01-02 15:04:05.120 UTC [1235] LOG:  statement: DROP DATABASE IF EXISTS "demo_orders" WITH (FORCE)
2025-01-02 15:04:05.121 UTC [1240] FATAL:  terminating connection due to administrator command
2025-01-02 15:04:05.130 UTC [1234] LOG:  execute stmtcache_1: DROP ROLE IF EXISTS "demo_orders"
`
	got := loggedStatements(log)
	want := []loggedStatement{
		{time: "15:04:05.100", text: `REVOKE ALL ON DATABASE "demo_orders" FROM "reporting"`},
		{time: "15:04:05.120", text: `DROP DATABASE IF EXISTS "demo_orders" WITH (FORCE)`},
		{time: "15:04:05.130", text: `DROP ROLE IF EXISTS "demo_orders"`},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(loggedStatement{})); diff != "" {
		t.Fatalf("loggedStatements (-want +got):\n%s", diff)
	}
	if err := inStatementOrder(got, "REVOKE ALL ON DATABASE", "DROP DATABASE", "DROP ROLE"); err != nil {
		t.Errorf("inStatementOrder: %v", err)
	}
	if err := inStatementOrder(got, "DROP ROLE", "DROP DATABASE"); err == nil || err.Error() != "DROP DATABASE ran before DROP ROLE" {
		t.Errorf("inStatementOrder, role first: %v; want DROP DATABASE ran before DROP ROLE", err)
	}
	if err := inStatementOrder(got[1:], "REVOKE ALL ON DATABASE", "DROP DATABASE"); err == nil {
		t.Error("inStatementOrder without the REVOKE: no error")
	}
}

// TestRenderDatabase checks the status table's row of a Database, a kind without replicas.
func TestRenderDatabase(t *testing.T) {
	ready := []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Reconciled"}}
	db := newObject("Database", sampleDatabase(), 0, 0, ready)
	db.noReplicas = true
	want := "KIND      NAME    READY  CONDITIONS\n" +
		"Database  orders  -      Ready=True\n"
	if diff := cmp.Diff(want, render([]object{db})); diff != "" {
		t.Errorf("render (-want +got):\n%s", diff)
	}
}

// TestCheckPage checks the demo's own check of the page against servers that get it right and wrong.
func TestCheckPage(t *testing.T) {
	page := func(h1 string) string { return "<!DOCTYPE html><html><body><h1>" + h1 + "</h1></body></html>" }
	cases := map[string]struct {
		name     string
		password string // the container's PASSWORD; none when empty
		hello    string // what /hello/ answers
		private  func(w http.ResponseWriter, r *http.Request)
		wantErr  string
	}{
		"greets the name":  {name: "Alice", hello: page("Hello Alice")},
		"escapes the name": {name: "A & B", hello: page("Hello A &amp; B")},
		"greets someone else": {
			name: "Alice", hello: page("Hello Bob"),
			wantErr: "does not greet Alice",
		},
		"takes the password": {name: "Alice", password: "s3cret", hello: page("Hello Alice"), private: basicAuth("s3cret", "Alice")},
		"private page open to all": {
			name: "Alice", password: "s3cret", hello: page("Hello Alice"),
			private: func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "Welcome back, Alice") },
			wantErr: "answers 200 without the password, want 401",
		},
		"private page refuses the password": {
			name: "Alice", password: "s3cret", hello: page("Hello Alice"), private: basicAuth("other", "Alice"),
			wantErr: "does not take the Secret's password",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("GET /hello/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, tc.hello) })
			if tc.private != nil {
				mux.HandleFunc("GET /private/", tc.private)
			}
			srv := httptest.NewServer(mux)
			defer srv.Close()
			cfg := &localweb.Config{Env: []localweb.EnvVar{{Name: "NAME", Value: tc.name}}}
			if tc.password != "" {
				cfg.Env = append(cfg.Env, localweb.EnvVar{Name: "PASSWORD", Value: tc.password, Secret: true})
			}
			err := checkPage(t.Context(), &localweb.Process{URL: srv.URL + "/hello/", Config: cfg}, tc.name)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("checkPage: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("checkPage error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// basicAuth returns a private page that accepts password and then welcomes name back.
func basicAuth(password, name string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, p, ok := r.BasicAuth(); !ok || p != password {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "Welcome back, "+name)
	}
}
