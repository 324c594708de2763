//go:build integration

package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/convergo-dev/convergo/examples/database/api/v1alpha1"
	"github.com/convergo-dev/convergo/examples/database/controller"
	"github.com/convergo-dev/convergo/reconcile/graph"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/harness"
	"github.com/convergo-dev/convergo/testing/optest"
	"github.com/convergo-dev/convergo/testing/postgres"
)

const timeout = optest.Timeout

// interval is how often the tests' operators observe PostgreSQL again.
const interval = 2 * time.Second

var (
	conditionsAre = optest.ConditionsAre[*v1alpha1.Database]
	ready         = map[string]string{status.Ready: "True/Reconciled", status.Reconciling: "absent", status.Stalled: "absent"}
)

// fixture is a private PostgreSQL server with an admin pool, and a namespace of the shared API server.
type fixture struct {
	env  *harness.Env
	ns   string
	pg   *postgres.Server
	pool *pgxpool.Pool
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{env: harness.Default(), pg: postgres.Start(t)}
	f.ns = f.env.Namespace(t)
	pool, err := pgxpool.New(context.Background(), f.pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	f.pool = pool
	return f
}

// setup registers the operator on f's server.
func (f *fixture) setup(mgr manager.Manager) error {
	return controller.Setup(controller.Server{Pool: f.pool, Host: f.pg.Host(), Port: f.pg.Port(), SSLMode: "disable", Interval: interval})(mgr)
}

func shippedCache() harness.ManagerOption {
	return harness.WithManagerOptions(func(o *manager.Options) { controller.CacheOptions(&o.Cache) })
}

// exec runs SQL statements as the admin.
func (f *fixture) exec(t *testing.T, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := f.pool.Exec(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// exists reports whether the query's single boolean is true.
func (f *fixture) is(t *testing.T, query string, args ...any) bool {
	t.Helper()
	var b bool
	if err := f.pool.QueryRow(t.Context(), query, args...).Scan(&b); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return b
}

func (f *fixture) roleExists(t *testing.T, name string) bool {
	return f.is(t, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, name)
}

func (f *fixture) databaseExists(t *testing.T, name string) bool {
	return f.is(t, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name)
}

// connects reports whether the Secret's URI connects, as the role, to the database; the error says why not.
func connects(ctx context.Context, secret *corev1.Secret) error {
	conn, err := pgx.Connect(ctx, string(secret.Data[controller.KeyURI]))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var user, db string
	if err := conn.QueryRow(ctx, `SELECT current_user, current_database()`).Scan(&user, &db); err != nil {
		return err
	}
	if user != string(secret.Data[controller.KeyUsername]) || db != string(secret.Data[controller.KeyDatabase]) {
		return fmt.Errorf("connected as %s to %s", user, db)
	}
	return nil
}

// waitForCredentials waits until the Database's Secret connects.
func waitForCredentials(t *testing.T, c client.Client, db *v1alpha1.Database) *corev1.Secret {
	t.Helper()
	secret := &corev1.Secret{}
	harness.Eventually(t, timeout, func() (bool, string) {
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: db.Namespace, Name: controller.SecretName(db)}, secret); err != nil {
			return false, err.Error()
		}
		if err := connects(t.Context(), secret); err != nil {
			return false, "the credentials do not connect: " + err.Error()
		}
		return true, ""
	})
	return secret
}

// TestDatabaseLifecycle follows one Database: the role, the database and the grant are created, the
// Secret's credentials connect; a dropped role, a changed password and a revoked grant are each
// restored by the next observation; deleting the Database revokes, drops the database, then the role,
// and only then removes the finalizer.
func TestDatabaseLifecycle(t *testing.T) {
	f := newFixture(t)
	f.exec(t, `CREATE ROLE reporting`)
	optest.StartOperator(t, f.env, f.setup, shippedCache())
	db := optest.Create(t, f.env.Client, &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "orders"},
		Spec: v1alpha1.DatabaseSpec{Grants: []v1alpha1.Grant{{Role: "reporting", Privileges: []v1alpha1.Privilege{"CONNECT", "TEMPORARY"}}}}})
	key := client.ObjectKeyFromObject(db)
	harness.WaitForObject(t, f.env.Client, key, db, timeout, conditionsAre(ready))
	name := controller.DatabaseName(db)
	if db.Status.DatabaseName != name || db.Status.SecretName != "orders-credentials" {
		t.Errorf("status names = %q, %q", db.Status.DatabaseName, db.Status.SecretName)
	}
	waitForCredentials(t, f.env.Client, db)
	grantHeld := func() bool {
		return f.is(t, `SELECT has_database_privilege('reporting', $1, 'TEMPORARY') AND EXISTS (
			SELECT 1 FROM pg_database d, aclexplode(d.datacl) a JOIN pg_roles r ON r.oid = a.grantee
			WHERE d.datname = $1 AND r.rolname = 'reporting' AND a.privilege_type = 'CONNECT')`, name)
	}
	if !grantHeld() {
		t.Fatal("reporting lacks its grant")
	}

	drifts := []struct {
		name     string
		sql      []string
		restored func() (bool, string)
	}{
		{"password changed", []string{fmt.Sprintf(`ALTER ROLE %q PASSWORD 'stolen'`, name)}, func() (bool, string) {
			var s corev1.Secret
			if err := f.env.Client.Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: "orders-credentials"}, &s); err != nil {
				return false, err.Error()
			}
			if err := connects(t.Context(), &s); err != nil {
				return false, err.Error()
			}
			return true, ""
		}},
		{"grant revoked", []string{fmt.Sprintf(`REVOKE ALL ON DATABASE %q FROM reporting`, name)}, func() (bool, string) {
			return grantHeld(), "reporting lacks its grant"
		}},
		{"role dropped", []string{
			fmt.Sprintf(`REASSIGN OWNED BY %q TO postgres`, name), fmt.Sprintf(`DROP OWNED BY %q`, name), fmt.Sprintf(`DROP ROLE %q`, name),
		}, func() (bool, string) {
			ok := f.is(t, `SELECT pg_get_userbyid(datdba) = $1 FROM pg_database WHERE datname = $1`, name)
			return ok, "the database is not owned by its role again"
		}},
	}
	for _, d := range drifts {
		f.exec(t, d.sql...)
		harness.Eventually(t, timeout, func() (bool, string) {
			ok, state := d.restored()
			return ok, d.name + ": " + state
		})
		harness.WaitForObject(t, f.env.Client, key, db, timeout, conditionsAre(ready))
		waitForCredentials(t, f.env.Client, db)
	}

	// A grant the spec no longer declares is pruned: revoked in PostgreSQL, then dropped from the
	// record on the Database.
	optest.MergePatch(t, f.env.Client, db, `{"spec":{"grants":null}}`)
	harness.Eventually(t, timeout, func() (bool, string) {
		var now v1alpha1.Database
		if err := f.env.Client.Get(t.Context(), key, &now); err != nil {
			return false, err.Error()
		}
		recorded, err := graph.RecordedExternal(&now)
		if err != nil {
			return false, err.Error()
		}
		revoked := !f.is(t, `SELECT EXISTS (SELECT 1 FROM pg_database d, aclexplode(d.datacl) a JOIN pg_roles r ON r.oid = a.grantee
			WHERE d.datname = $1 AND r.rolname = 'reporting')`, name)
		grants := slices.ContainsFunc(recorded, func(r graph.ExternalRecord) bool { return r.Kind == "postgres.grant" })
		return revoked && !grants, fmt.Sprintf("revoked %v, recorded %v", revoked, recorded)
	})

	// Ordered deletion: revoking, then dropping the database, then the role; the finalizer goes last.
	if err := f.env.Client.Delete(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	harness.WaitForDeletion(t, f.env.Client, db, timeout)
	if f.databaseExists(t, name) || f.roleExists(t, name) || !f.roleExists(t, "reporting") {
		t.Errorf("after deletion: database %v, role %v, reporting %v; want false, false, true",
			f.databaseExists(t, name), f.roleExists(t, name), f.roleExists(t, "reporting"))
	}
	for _, e := range optest.Events(t, f.env.Client, db) {
		if e.Type == corev1.EventTypeWarning {
			t.Errorf("warning during deletion (a step out of order fails in PostgreSQL): %s: %s", e.Reason, e.Note)
		}
	}
}

// TestDatabaseRetain: with deletionPolicy Retain, deleting the Database leaves the database, the role
// and the Secret, released (no owner mark), and the credentials still connect.
func TestDatabaseRetain(t *testing.T) {
	f := newFixture(t)
	optest.StartOperator(t, f.env, f.setup, shippedCache())
	db := optest.Create(t, f.env.Client, &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "ledger"},
		Spec: v1alpha1.DatabaseSpec{DeletionPolicy: v1alpha1.DeletionPolicyRetain}})
	harness.WaitForObject(t, f.env.Client, client.ObjectKeyFromObject(db), db, timeout, conditionsAre(ready))
	secret := waitForCredentials(t, f.env.Client, db)
	if err := f.env.Client.Delete(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	harness.WaitForDeletion(t, f.env.Client, db, timeout)
	name := controller.DatabaseName(db)
	marked := f.is(t, `SELECT shobj_description(oid, 'pg_database') IS NOT NULL FROM pg_database WHERE datname = $1`, name)
	if !f.databaseExists(t, name) || !f.roleExists(t, name) || marked {
		t.Errorf("retained: database %v, role %v, still marked %v", f.databaseExists(t, name), f.roleExists(t, name), marked)
	}
	if err := f.env.Client.Get(t.Context(), client.ObjectKeyFromObject(secret), secret); err != nil {
		t.Fatalf("the Secret was not kept: %v", err)
	}
	if err := connects(t.Context(), secret); err != nil {
		t.Errorf("kept credentials do not connect: %v", err)
	}
}

// TestDatabaseNeverSteals: a database that exists without this Database's owner mark is refused, the
// Database says so in its conditions (Stalled, NotOwned: someone must act), and deleting the Database
// never drops it.
func TestDatabaseNeverSteals(t *testing.T) {
	f := newFixture(t)
	f.exec(t, `CREATE DATABASE payroll`)
	optest.StartOperator(t, f.env, f.setup, shippedCache())
	db := optest.Create(t, f.env.Client, &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "payroll"},
		Spec: v1alpha1.DatabaseSpec{DatabaseName: "payroll"}})
	harness.WaitForObject(t, f.env.Client, client.ObjectKeyFromObject(db), db, timeout, func(db *v1alpha1.Database) bool {
		c := meta.FindStatusCondition(db.GetConditions(), status.Stalled)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == "NotOwned" &&
			strings.Contains(c.Message, `external node "database": postgres.database payroll exists but was not created for this owner`)
	})
	if owner := f.is(t, `SELECT pg_get_userbyid(datdba) = 'postgres' FROM pg_database WHERE datname = 'payroll'`); !owner {
		t.Error("the existing database was changed")
	}
	if err := f.env.Client.Delete(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	harness.WaitForDeletion(t, f.env.Client, db, timeout)
	if !f.databaseExists(t, "payroll") {
		t.Error("deleting the Database dropped a database it did not create")
	}
}

// TestDatabaseSuspended: a suspended Database's PostgreSQL objects are not touched, even when they
// drifted; resuming repairs them.
func TestDatabaseSuspended(t *testing.T) {
	f := newFixture(t)
	op := optest.StartOperator(t, f.env, f.setup, shippedCache())
	db := optest.Create(t, f.env.Client, &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "audit"}})
	key := client.ObjectKeyFromObject(db)
	harness.WaitForObject(t, f.env.Client, key, db, timeout, conditionsAre(ready))
	secret := waitForCredentials(t, f.env.Client, db)
	name := controller.DatabaseName(db)
	op.ReconcileAfter(t, key, func(t testing.TB) client.Object {
		return optest.MergePatch(t, f.env.Client, db, `{"spec":{"suspend":true}}`)
	})
	f.exec(t, fmt.Sprintf(`ALTER ROLE %q PASSWORD 'changed-by-hand'`, name))
	// Two more reconciles while suspended (a label wakes the controller): nothing is repaired.
	for i := range 2 {
		op.ReconcileAfter(t, key, func(t testing.TB) client.Object {
			return optest.MergePatch(t, f.env.Client, db, fmt.Sprintf(`{"metadata":{"labels":{"poke":"%d"}}}`, i))
		})
	}
	if err := connects(t.Context(), secret); err == nil {
		t.Error("a suspended Database's role was repaired")
	}
	optest.MergePatch(t, f.env.Client, db, `{"spec":{"suspend":false}}`)
	waitForCredentials(t, f.env.Client, db)
}

// TestDatabaseOutage: PostgreSQL stopped for 30s: the Database reports Reconciling with the node and
// the error, without flapping; once PostgreSQL is back it is Ready again and nothing was lost.
func TestDatabaseOutage(t *testing.T) {
	f := newFixture(t)
	optest.StartOperator(t, f.env, f.setup, shippedCache())
	db := optest.Create(t, f.env.Client, &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "events"}})
	key := client.ObjectKeyFromObject(db)
	harness.WaitForObject(t, f.env.Client, key, db, timeout, conditionsAre(ready))
	secret := waitForCredentials(t, f.env.Client, db)

	f.pg.Stop(t)
	stopped := time.Now()
	harness.WaitForObject(t, f.env.Client, key, db, timeout, func(db *v1alpha1.Database) bool {
		c := meta.FindStatusCondition(db.GetConditions(), status.Reconciling)
		return c != nil && c.Reason == "ObserveFailed" && strings.Contains(c.Message, `external node "role"`)
	})
	down := *meta.FindStatusCondition(db.GetConditions(), status.Reconciling)
	for time.Since(stopped) < 30*time.Second {
		time.Sleep(time.Second)
		var now v1alpha1.Database
		if err := f.env.Client.Get(t.Context(), key, &now); err != nil {
			t.Fatal(err)
		}
		c := meta.FindStatusCondition(now.GetConditions(), status.Reconciling)
		if c == nil || c.Status != down.Status || c.Reason != down.Reason || !c.LastTransitionTime.Equal(&down.LastTransitionTime) {
			t.Fatalf("conditions flapped while PostgreSQL was down: %+v, then %+v", down, c)
		}
	}
	f.pg.Start(t)
	harness.WaitForObject(t, f.env.Client, key, db, timeout, conditionsAre(ready))
	if err := connects(t.Context(), secret); err != nil {
		t.Errorf("credentials after the outage: %v", err)
	}
}

// TestDatabaseRestartWritesNothing: an operator restarted over converged Databases sends no write to
// the API server and none to PostgreSQL (the catalog rows of the role, the database and their
// comments keep their transaction ids).
func TestDatabaseRestartWritesNothing(t *testing.T) {
	f := newFixture(t)
	f.exec(t, `CREATE ROLE analyst`)
	var dbs []*v1alpha1.Database
	for _, n := range []string{"a", "b"} {
		db := &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: n},
			Spec: v1alpha1.DatabaseSpec{Grants: []v1alpha1.Grant{{Role: "analyst", Privileges: []v1alpha1.Privilege{"CONNECT"}}}}}
		if err := f.env.Client.Create(t.Context(), db); err != nil { // deleted below, while an operator runs
			t.Fatal(err)
		}
		dbs = append(dbs, db)
	}
	t.Run("converge", func(t *testing.T) {
		optest.StartOperator(t, f.env, f.setup, shippedCache())
		for _, db := range dbs {
			harness.WaitForObject(t, f.env.Client, client.ObjectKeyFromObject(db), db, timeout, conditionsAre(ready))
		}
	}) // the first operator stops here
	catalog := func() string {
		var s string
		if err := f.pool.QueryRow(t.Context(), `SELECT string_agg(x, ',' ORDER BY x) FROM (
			SELECT 'role:' || rolname || '@' || xmin::text AS x FROM pg_authid WHERE rolname LIKE $1
			UNION ALL SELECT 'db:' || datname || '@' || xmin::text FROM pg_database WHERE datname LIKE $1
			UNION ALL SELECT 'comment@' || xmin::text FROM pg_shdescription) rows`, strings.ReplaceAll(f.ns, "-", "_")+"%").Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := catalog()
	op := optest.StartOperator(t, f.env, f.setup, shippedCache())
	for _, db := range dbs {
		// Two observations each: the first reconcile after the start, then the interval's.
		m := op.Reconciles.Mark()
		op.Reconciles.WaitFor(t, client.ObjectKeyFromObject(db), m, timeout)
		m = op.Reconciles.Mark()
		op.Reconciles.WaitFor(t, client.ObjectKeyFromObject(db), m, timeout)
	}
	if w := op.Requests.Snapshot().Writes(); w != 0 {
		t.Errorf("the restarted operator sent %d writes to the API server: %v", w, op.Requests.Snapshot())
	}
	if after := catalog(); after != before {
		t.Errorf("the restarted operator wrote to PostgreSQL: catalog rows\n%s\nbecame\n%s", before, after)
	}
	for _, db := range dbs {
		if err := f.env.Client.Delete(t.Context(), db); err != nil {
			t.Fatal(err)
		}
		harness.WaitForDeletion(t, f.env.Client, db, timeout)
	}
}

// TestDatabaseDeletionFailureSaid: the Database's role cannot be dropped (a table in another database
// is owned by it), then PostgreSQL is killed while the deletion is held there, after the database was
// dropped. The whole time the Database reads Ready=False, reason DeletionFailed, the message naming
// the node and the error of the moment (the role refusing; then, PostgreSQL down, the first node whose
// absence can no longer be confirmed), finalizer in place; once PostgreSQL is back and the table is
// gone, the deletion finishes and nothing is left.
func TestDatabaseDeletionFailureSaid(t *testing.T) {
	f := newFixture(t)
	optest.StartOperator(t, f.env, f.setup, shippedCache())
	db := optest.Create(t, f.env.Client, &v1alpha1.Database{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "ledger"}})
	key := client.ObjectKeyFromObject(db)
	harness.WaitForObject(t, f.env.Client, key, db, timeout, conditionsAre(ready))
	name := controller.DatabaseName(db)
	f.exec(t, `CREATE TABLE hold (x int)`, fmt.Sprintf(`ALTER TABLE hold OWNER TO %q`, name))

	if err := f.env.Client.Delete(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	failedWith := func(node, substr string) func(*v1alpha1.Database) bool {
		return func(db *v1alpha1.Database) bool {
			c := meta.FindStatusCondition(db.GetConditions(), status.Ready)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "DeletionFailed" &&
				strings.Contains(c.Message, `external node "`+node) && strings.Contains(c.Message, substr)
		}
	}
	harness.WaitForObject(t, f.env.Client, key, db, timeout, failedWith(`role"`, "some objects depend on it"))
	if f.databaseExists(t, name) {
		t.Error("the database is still there while the deletion is held at the role")
	}

	f.pg.Kill(t)
	harness.WaitForObject(t, f.env.Client, key, db, timeout, failedWith("", "connection refused"))
	if c := meta.FindStatusCondition(db.GetConditions(), status.Reconciling); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "DeletionFailed" {
		t.Errorf("Reconciling while PostgreSQL is down: %+v, want True/DeletionFailed", c)
	}
	if len(db.Finalizers) == 0 {
		t.Error("the finalizer went while the role exists")
	}

	f.pg.Start(t)
	harness.WaitForObject(t, f.env.Client, key, db, timeout, failedWith(`role"`, "some objects depend on it"))
	f.exec(t, `DROP TABLE hold`)
	harness.WaitForDeletion(t, f.env.Client, db, timeout)
	if f.databaseExists(t, name) || f.roleExists(t, name) {
		t.Errorf("after the deletion: database %v, role %v; want both gone", f.databaseExists(t, name), f.roleExists(t, name))
	}
}
