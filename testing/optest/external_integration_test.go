//go:build integration

package optest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/testing/harness"
	"github.com/convergo-dev/convergo/testing/optest"
	"github.com/convergo-dev/convergo/testing/postgres"
)

// roles is a small graph.External of PostgreSQL roles (without passwords), its owner mark in the
// role's comment, as examples/database's Roles keeps it.
type roles struct{ pool *pgxpool.Pool }

func (roles) Kind() string { return "postgres.role" }

func (r roles) Observe(ctx context.Context, name string, _ struct{}) (graph.Observation, error) {
	var comment string
	err := r.pool.QueryRow(ctx, `SELECT coalesce(shobj_description(oid, 'pg_authid'), '') FROM pg_roles WHERE rolname = $1`, name).Scan(&comment)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return graph.Observation{}, nil
	case err != nil:
		return graph.Observation{}, err
	}
	return graph.Observation{Exists: true, Owner: comment, UpToDate: true, Ready: true}, nil
}

func (r roles) Apply(ctx context.Context, name string, _ struct{}, _ graph.Observation, owner string) error {
	return pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "CREATE ROLE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "COMMENT ON ROLE "+pgx.Identifier{name}.Sanitize()+" IS '"+strings.ReplaceAll(owner, "'", "''")+"'")
		return err
	})
}

func (r roles) Delete(ctx context.Context, name string) error {
	_, err := r.pool.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{name}.Sanitize())
	return err
}

// TestExternalNodeThroughACrash is the walk-through of docs/testing.md ("Testing an external node
// and a fault"): an external node on a private PostgreSQL, its calls counted, the server killed while
// the node's Apply is under way and started again; then the node converges, and once converged costs
// one Observe, no write to PostgreSQL and no API request.
func TestExternalNodeThroughACrash(t *testing.T) {
	env := harness.Default()
	ctx := t.Context()
	srv := postgres.Start(t)
	pool, err := pgxpool.New(ctx, srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	requests := harness.NewRequestCounter()
	c := env.ClientFor(t, requests.Wrap(env.Config))
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace(t), Name: "owner"}}
	if err := c.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	calls := optest.NewExternalCounter()
	g := graph.New()
	graph.AddExternal(g, "role", optest.CountExternal(calls, graph.External[struct{}](roles{pool})), "app", struct{}{})
	a := apply.NewApplier(c, c)

	// The node's Apply is held until the server is dead.
	reached, resume := make(chan struct{}), make(chan struct{})
	calls.OnCall(func(ctx context.Context, call optest.Call) error {
		if call.Step == optest.StepApply {
			close(reached)
			<-resume
		}
		return nil
	})
	requests.Reset()
	done := make(chan error, 1)
	go func() {
		_, err := g.Apply(ctx, a, owner)
		done <- err
	}()
	<-reached
	srv.Kill(t)
	close(resume)
	if err := <-done; err == nil || !strings.Contains(err.Error(), `external node "role" (postgres.role app): create`) {
		t.Fatalf("Apply with the server killed midway: %v; want the create to fail", err)
	}
	calls.OnCall(nil)

	got := calls.Snapshot()
	if diff := cmp.Diff(map[string]int{"postgres.role/observe": 1, "postgres.role/apply": 1}, got.Counts()); diff != "" {
		t.Errorf("calls with the server killed midway (-want +got):\n%s", diff)
	}
	applied := got.Filter(func(c optest.Call) bool { return c.Step == optest.StepApply })
	if len(applied) != 1 || applied[0].Err == nil {
		t.Errorf("apply calls %v: want one, failed", applied)
	}
	// The identity is recorded on the owner before the object is created: the patch was sent
	// before the Apply call was made.
	patches := requests.Snapshot().Filter(func(r harness.Request) bool { return r.Verb == "patch" && r.Resource == "configmaps" })
	if len(patches) != 1 || len(applied) != 1 || !patches[0].Time.Before(applied[0].Time) {
		t.Errorf("patches of the owner %v, apply calls %v: want the owner's record patched before the apply", patches, applied)
	}

	srv.Start(t)
	pool.Reset() // its connections died with the server
	mark := srv.MarkLog()
	calls.Reset()
	res, err := g.Apply(ctx, a, owner)
	if err != nil || !res.Ready {
		t.Fatalf("Apply after the restart: %+v, %v; want it ready", res, err)
	}
	if diff := cmp.Diff(map[string]int{"postgres.role/observe": 2, "postgres.role/apply": 1}, calls.Snapshot().Counts()); diff != "" {
		t.Errorf("calls after the restart (-want +got):\n%s", diff)
	}
	if !hasStatement(srv.Statements(t, mark), `CREATE ROLE "app"`) {
		t.Errorf("after the restart, no CREATE ROLE in the statements:\n%v", srv.Statements(t, mark))
	}

	// Converged: one Observe, no write to PostgreSQL, no API request.
	mark = srv.MarkLog()
	calls.Reset()
	requests.Reset()
	if _, err := g.Apply(ctx, a, owner); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"postgres.role/observe": 1}, calls.Snapshot().Counts()); diff != "" {
		t.Errorf("calls once converged (-want +got):\n%s", diff)
	}
	for _, st := range srv.Statements(t, mark) {
		if !strings.HasPrefix(st.Text, "SELECT") {
			t.Errorf("once converged, PostgreSQL ran %s; want reads only", st)
		}
	}
	if reqs := requests.Snapshot(); len(reqs) != 0 {
		t.Errorf("once converged, %d API requests:\n%s", len(reqs), reqs)
	}
}

func hasStatement(sts []postgres.Statement, text string) bool {
	for _, st := range sts {
		if st.Text == text {
			return true
		}
	}
	return false
}
