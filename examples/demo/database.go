package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbv1alpha1 "github.com/convergo-dev/convergo/examples/database/api/v1alpha1"
	database "github.com/convergo-dev/convergo/examples/database/controller"
	"github.com/convergo-dev/convergo/testing/postgres"
)

// The Database part of the demo: the Database operator on a private PostgreSQL server. A Database
// converges (a role, a database owned by it, a grant, a credentials Secret), an application's
// connection with the Secret's URI works, a password changed behind the operator's back is set back,
// and deleting the Database revokes, drops the database, then the role, and removes the finalizer last.

const (
	// databaseSample is the name of the demo's Database.
	databaseSample = "orders"
	// grantee is the role the Database grants privileges to: it must exist, so the admin creates it.
	grantee = "reporting"
	// observeInterval is how often the Database operator observes PostgreSQL again (the operator's
	// default is a minute): a drift is repaired within it.
	observeInterval = 2 * time.Second
	// pollInterval is how often the demo looks at PostgreSQL and the API server while it waits.
	pollInterval = 200 * time.Millisecond
	// teardownPoll is how often it looks while the Database is deleted, to see each step.
	teardownPoll = 10 * time.Millisecond
)

// sampleDatabase returns the demo's Database: it grants CONNECT and TEMPORARY to the grantee.
func sampleDatabase() *dbv1alpha1.Database {
	return &dbv1alpha1.Database{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: databaseSample},
		Spec: dbv1alpha1.DatabaseSpec{Grants: []dbv1alpha1.Grant{
			{Role: grantee, Privileges: []dbv1alpha1.Privilege{"CONNECT", "TEMPORARY"}},
		}},
	}
}

// startPostgres starts the private PostgreSQL server of the Database operator, its initdb and pg_ctl
// output and server log going to logPath, and connects a pool to it as the superuser postgres (the
// operator's pool, which the demo also uses as "the admin"). stop closes the pool and the server.
func startPostgres(ctx context.Context, out io.Writer, root, logPath string) (*postgres.Server, *pgxpool.Pool, func(), error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("create the PostgreSQL log: %w", err)
	}
	began := time.Now()
	// No statement logged but during the deletion (logDDL): the statements that set a password
	// would log it.
	pg, err := postgres.New(ctx, postgres.WithLogOutput(logFile), postgres.WithSetting("log_statement", "none"))
	if err != nil {
		logFile.Close()
		return nil, nil, nil, fmt.Errorf("start the Database operator's private PostgreSQL: %w (as root, make demo installs it)", err)
	}
	stopServer := func() {
		if err := pg.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		}
		logFile.Close()
	}
	pool, err := pgxpool.New(ctx, pg.URL())
	if err != nil {
		stopServer()
		return nil, nil, nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	stop := func() {
		fmt.Fprintln(out, "Stopping PostgreSQL.")
		pool.Close()
		stopServer()
	}
	var version string
	if err := pool.QueryRow(ctx, "SELECT split_part(current_setting('server_version'), ' ', 1)").Scan(&version); err != nil {
		stop()
		return nil, nil, nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	fmt.Fprintf(out, "PostgreSQL %s ready in %s: %s (the admin; log: %s)\n",
		version, time.Since(began).Round(100*time.Millisecond), pg.URL(), relative(root, logPath))
	return pg, pool, stop, nil
}

// databaseServer is the PostgreSQL server the Database operator manages databases on: the private one.
func databaseServer(pg *postgres.Server, pool *pgxpool.Pool) database.Server {
	return database.Server{Pool: pool, Host: pg.Host(), Port: pg.Port(), SSLMode: "disable", Interval: observeInterval}
}

// databaseSteps shows the Database operator: a Database converges, its credentials are used, a drift
// is repaired, and its deletion runs in order.
func (d *demo) databaseSteps(ctx context.Context) error {
	db := sampleDatabase()
	name := database.DatabaseName(db)
	step(d.out, fmt.Sprintf("Database operator: creating Database %s; it gets a PostgreSQL role and a database %s owned by it, "+
		"CONNECT and TEMPORARY granted to role %s, and a Secret %s", db.Name, name, grantee, database.SecretName(db)))
	if err := d.createDatabase(ctx, db); err != nil {
		return err
	}

	step(d.out, "Using the credentials as an application would: connecting with the uri of Secret "+database.SecretName(db))
	secret, err := d.printCredentials(ctx, db)
	if err != nil {
		return err
	}
	rows, err := d.useCredentials(ctx, secret)
	if err != nil {
		return err
	}
	if err := d.printGrant(ctx, name); err != nil {
		return err
	}

	step(d.out, fmt.Sprintf("Drift: the admin changes the role's password behind the operator's back: ALTER ROLE %s PASSWORD 'changed'", name))
	if err := d.repairDrift(ctx, name, secret, rows); err != nil {
		return err
	}

	step(d.out, fmt.Sprintf("Deleting Database %s: the operator revokes the grant and deletes the Secret, drops the database, "+
		"then the role, and removes its finalizer last", db.Name))
	return d.deleteDatabase(ctx, db)
}

// createDatabase creates the grantee role (as the admin) and the Database, and prints the status
// table until the Database is Ready.
func (d *demo) createDatabase(ctx context.Context, db *dbv1alpha1.Database) error {
	var exists bool
	if err := d.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, grantee).Scan(&exists); err != nil {
		return fmt.Errorf("look up role %s: %w", grantee, err)
	}
	if !exists {
		if _, err := d.pool.Exec(ctx, "CREATE ROLE "+pgx.Identifier{grantee}.Sanitize()); err != nil {
			return fmt.Errorf("create role %s: %w", grantee, err)
		}
		fmt.Fprintf(d.out, "  as the admin: CREATE ROLE %s (the Database grants to an existing role)\n", grantee)
	}
	if err := d.client.Create(ctx, db); err != nil {
		return fmt.Errorf("create database %s: %w", db.Name, err)
	}
	fmt.Fprintf(d.out, "  Database/%s created in namespace %s\n", db.Name, namespace)
	return d.watchTable(ctx, func(objs []object) bool {
		o := find(objs, "Database/"+db.Name)
		return o != nil && o.ready()
	})
}

// printCredentials waits until the Database's Secret connects and prints it, the password left out.
func (d *demo) printCredentials(ctx context.Context, db *dbv1alpha1.Database) (*corev1.Secret, error) {
	secret, err := d.waitForCredentials(ctx, db)
	if err != nil {
		return nil, err
	}
	uri := string(secret.Data[database.KeyURI])
	if u, err := url.Parse(uri); err == nil {
		uri = u.Redacted()
	}
	fmt.Fprintf(d.out, "  Secret %s, written by the operator once the database was ready:\n", secret.Name)
	for _, k := range []string{database.KeyUsername, database.KeyHost, database.KeyPort, database.KeyDatabase} {
		fmt.Fprintf(d.out, "    %-9s %s\n", k, secret.Data[k])
	}
	fmt.Fprintf(d.out, "    %-9s (not printed)\n", database.KeyPassword)
	fmt.Fprintf(d.out, "    %-9s %s\n", database.KeyURI, uri)
	return secret, nil
}

// waitForCredentials waits until the Database's Secret exists and its URI connects.
func (d *demo) waitForCredentials(ctx context.Context, db *dbv1alpha1.Database) (*corev1.Secret, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.timeout)
	defer cancel()
	key := client.ObjectKey{Namespace: db.Namespace, Name: database.SecretName(db)}
	for {
		secret := &corev1.Secret{}
		err := d.client.Get(ctx, key, secret)
		if err == nil {
			var conn *pgx.Conn
			if conn, err = connect(ctx, secret); err == nil {
				conn.Close(ctx)
				return secret, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the credentials of Database %s to connect (last: %v): %w", db.Name, err, context.Cause(ctx))
		case <-time.After(pollInterval):
		}
	}
}

// useCredentials connects with the Secret's URI, creates a table in the database, fills it, reads it
// back and prints what it did. It returns the number of rows.
func (d *demo) useCredentials(ctx context.Context, secret *corev1.Secret) (int, error) {
	conn, err := connect(ctx, secret)
	if err != nil {
		return 0, fmt.Errorf("connect with the secret's uri: %w", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL);
		INSERT INTO items VALUES (1, 'apples'), (2, 'pears'), (3, 'plums')`)
	if err != nil {
		return 0, fmt.Errorf("use the credentials: %w", err)
	}
	var (
		user, db, version string
		rows              int
	)
	err = conn.QueryRow(ctx, `SELECT current_user, current_database(), split_part(current_setting('server_version'), ' ', 1), (SELECT count(*) FROM items)`).
		Scan(&user, &db, &version, &rows)
	if err != nil {
		return 0, fmt.Errorf("use the credentials: %w", err)
	}
	fmt.Fprintf(d.out, "  SELECT current_user, current_database(), (SELECT count(*) FROM items) -> %s, %s, %d\n", user, db, rows)
	fmt.Fprintf(d.out, "Credentials work: connected with the Secret's uri as %s to database %s (PostgreSQL %s), "+
		"created table items and read back %d rows.\n", user, db, version, rows)
	return rows, nil
}

// printGrant prints what the grantee holds on the database and who owns it, as the admin sees it.
func (d *demo) printGrant(ctx context.Context, name string) error {
	var (
		owner string
		held  []string
	)
	err := d.pool.QueryRow(ctx, `SELECT pg_get_userbyid(d.datdba),
		coalesce((SELECT array_agg(a.privilege_type ORDER BY a.privilege_type) FROM aclexplode(d.datacl) a
			JOIN pg_roles r ON r.oid = a.grantee WHERE r.rolname = $2), '{}')
		FROM pg_database d WHERE d.datname = $1`, name, grantee).Scan(&owner, &held)
	if err != nil {
		return fmt.Errorf("read the grants on %s: %w", name, err)
	}
	fmt.Fprintf(d.out, "  As the admin sees it: database %s is owned by role %s; role %s holds %s on it.\n",
		name, owner, grantee, strings.Join(held, ", "))
	return nil
}

// repairDrift changes the role's password as the admin, shows the Secret's credentials refused, and
// waits until the operator has set the password back and they connect again.
func (d *demo) repairDrift(ctx context.Context, name string, secret *corev1.Secret, rows int) error {
	if _, err := d.pool.Exec(ctx, fmt.Sprintf("ALTER ROLE %s PASSWORD 'changed'", pgx.Identifier{name}.Sanitize())); err != nil {
		return fmt.Errorf("change the password of role %s: %w", name, err)
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, d.opts.timeout)
	defer cancel()
	refused := false
	for {
		conn, err := connect(ctx, secret)
		if err == nil {
			var n int
			err = conn.QueryRow(ctx, `SELECT count(*) FROM items`).Scan(&n)
			conn.Close(ctx)
			if err != nil {
				return fmt.Errorf("after the repair: %w", err)
			}
			if !refused {
				fmt.Fprintf(d.out, "  (the operator set the password back before the demo could try the old one)\n")
			}
			fmt.Fprintf(d.out, "Drift repaired in %.1fs: the operator, observing PostgreSQL every %s, set the role's password back to the Secret's; "+
				"the Secret's uri connects again and table items still has %d of %d rows.\n", time.Since(began).Seconds(), observeInterval, n, rows)
			return nil
		}
		if !refused {
			refused = true
			fmt.Fprintf(d.out, "  +%4.2fs  the Secret's credentials are refused: %s\n", time.Since(began).Seconds(), pgMessage(err))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the operator to repair the password of role %s (last: %v): %w", name, err, context.Cause(ctx))
		case <-time.After(pollInterval):
		}
	}
}

// deleteDatabase deletes the Database and watches its PostgreSQL objects, its Secret and itself go,
// checking that they go in the order of its graph, backwards, and the finalizer last.
func (d *demo) deleteDatabase(ctx context.Context, db *dbv1alpha1.Database) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.timeout)
	defer cancel()
	name := database.DatabaseName(db)
	ordered, after, verbs := teardown(db)
	if err := d.client.Get(ctx, client.ObjectKeyFromObject(db), db); err != nil {
		return fmt.Errorf("get database %s: %w", db.Name, err)
	}
	uid := db.UID
	// PostgreSQL logs the operator's statements during the deletion (and only then: the statements
	// that set a password would log it).
	if err := d.logDDL(ctx, true); err != nil {
		return err
	}
	defer func() {
		if err := d.logDDL(context.WithoutCancel(ctx), false); err != nil {
			fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		}
	}()
	fmt.Fprintln(d.out, "  as the admin: ALTER SYSTEM SET log_statement = 'ddl' (PostgreSQL logs the statements it runs during the deletion)")
	logFrom := fileSize(d.pg.LogFile())
	began := time.Now()
	if err := d.client.Delete(ctx, db); err != nil {
		return fmt.Errorf("delete database %s: %w", db.Name, err)
	}
	var got []string
	gone := map[string]bool{}
	for len(got) < len(ordered) {
		// Each look reads what goes last first: whatever it finds gone, everything that had to go
		// before was gone already, so a later read never reports it still there by a race.
		present, err := d.teardownState(ctx, db, name)
		if err != nil {
			return err
		}
		for _, what := range ordered {
			if present[what] || gone[what] {
				continue
			}
			gone[what] = true
			got = append(got, what)
			fmt.Fprintf(d.out, "  +%4.2fs  %-28s %s\n", time.Since(began).Seconds(), what, verbs[what])
		}
		if len(got) == len(ordered) {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for Database %s to be deleted (gone: %v): %w", db.Name, got, context.Cause(ctx))
		case <-time.After(teardownPoll):
		}
	}
	order, err := inDependencyOrder(got, after)
	if err != nil {
		return fmt.Errorf("%s deleted in the order %v: %w", database.Name, got, err)
	}
	logged, err := readFrom(d.pg.LogFile(), logFrom)
	if err != nil {
		return fmt.Errorf("read PostgreSQL's log: %w", err)
	}
	stmts := loggedStatements(logged)
	fmt.Fprintln(d.out, "  PostgreSQL's log, the statements it ran:")
	for _, st := range stmts {
		fmt.Fprintf(d.out, "    %s  %s\n", st.time, st.text)
	}
	if err := inStatementOrder(stmts, "REVOKE ALL ON DATABASE", "DROP DATABASE", "DROP ROLE"); err != nil {
		return fmt.Errorf("%s's statements: %w", database.Name, err)
	}
	if err := d.noFailedDeletion(ctx, db.Name, uid); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  %s: %s, in order.\n", database.Name, order)

	var dbLeft, roleLeft, granteeLeft bool
	err = d.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1),
		EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1), EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $2)`,
		name, grantee).Scan(&dbLeft, &roleLeft, &granteeLeft)
	if err != nil {
		return fmt.Errorf("look in PostgreSQL after the deletion: %w", err)
	}
	if dbLeft || roleLeft || !granteeLeft {
		return fmt.Errorf("after the deletion: database %s exists %v, role %s exists %v, role %s exists %v; want false, false, true",
			name, dbLeft, name, roleLeft, grantee, granteeLeft)
	}
	fmt.Fprintf(d.out, "Database %s deleted in order: in PostgreSQL, database %s and role %s are gone; role %s, which was only granted privileges, remains.\n",
		db.Name, name, name, grantee)
	return nil
}

// logDDL sets PostgreSQL's log_statement to ddl, or back to its default, and waits until the pool's
// connections run with it.
func (d *demo) logDDL(ctx context.Context, on bool) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	stmt, want := "ALTER SYSTEM RESET log_statement", "none"
	if on {
		stmt, want = "ALTER SYSTEM SET log_statement = 'ddl'", "ddl"
	}
	if _, err := d.pool.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	if _, err := d.pool.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return fmt.Errorf("reload PostgreSQL's configuration: %w", err)
	}
	// The server signals every connection at once; each applies the change before its next statement.
	for {
		var got string
		if err := d.pool.QueryRow(ctx, "SHOW log_statement").Scan(&got); err != nil {
			return fmt.Errorf("SHOW log_statement: %w", err)
		}
		if got == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for log_statement = %s: %w", want, context.Cause(ctx))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// loggedStatement is a statement in PostgreSQL's log, with the time of day it was logged.
type loggedStatement struct{ time, text string }

// loggedStatements returns the statements that log_statement logged in log, a part of PostgreSQL's
// log with the default log_line_prefix: "2025-01-02 15:04:05.000 UTC [1234] LOG:  statement: ..."
// for the simple query protocol, "... LOG:  execute <unnamed>: ..." for the extended one (pgx's
// batches and statements with arguments; "execute fetch from" continues a portal, no statement).
func loggedStatements(log string) []loggedStatement {
	var out []loggedStatement
	for _, line := range strings.Split(log, "\n") {
		prefix, msg, ok := strings.Cut(line, "LOG:  ")
		if !ok {
			continue
		}
		text, ok := strings.CutPrefix(msg, "statement: ")
		if rest, isExecute := strings.CutPrefix(msg, "execute "); !ok && isExecute && !strings.HasPrefix(rest, "fetch from ") {
			_, text, ok = strings.Cut(rest, ": ")
		}
		if !ok {
			continue
		}
		at := strings.TrimSpace(prefix)
		if f := strings.Fields(prefix); len(f) >= 2 {
			at = f[1]
		}
		out = append(out, loggedStatement{time: at, text: text})
	}
	return out
}

// inStatementOrder checks that stmts hold a statement starting with each of prefixes, the first of each
// after the first of the one before.
func inStatementOrder(stmts []loggedStatement, prefixes ...string) error {
	last := -1
	for i, p := range prefixes {
		pos := slices.IndexFunc(stmts, func(st loggedStatement) bool { return strings.HasPrefix(st.text, p) })
		switch {
		case pos < 0:
			return fmt.Errorf("no %s statement in PostgreSQL's log", p)
		case pos < last:
			return fmt.Errorf("%s ran before %s", p, prefixes[i-1])
		}
		last = pos
	}
	return nil
}

// fileSize returns the size of the file at path, 0 if it cannot be read.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readFrom returns the content of the file at path from offset on.
func readFrom(path string, offset int64) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if offset > int64(len(data)) {
		offset = 0
	}
	return string(data[offset:]), nil
}

// teardown names what deleting db removes: in the order the demo lists what it finds gone in the same
// look, what must be gone before each (its graph backwards: the grant and the Secret depend on the
// database, which depends on the role; the finalizer goes last), and what happens to each.
func teardown(db *dbv1alpha1.Database) (ordered []string, after map[string][]string, verbs map[string]string) {
	name := database.DatabaseName(db)
	grant, secret := "grant to "+grantee, "Secret/"+database.SecretName(db)
	dbName, role, owner := "database "+name, "role "+name, "Database/"+db.Name
	ordered = []string{grant, secret, dbName, role, owner}
	after = map[string][]string{grant: nil, secret: nil, dbName: {grant, secret}, role: {dbName}, owner: {role}}
	verbs = map[string]string{grant: "revoked", secret: "deleted", dbName: "dropped", role: "dropped", owner: "gone: its finalizer was removed"}
	return ordered, after, verbs
}

// teardownState looks at what of the Database is still there, reading what goes last first: the
// Database (its finalizer), then in one PostgreSQL query the role, the database and the grant, then
// the Secret.
func (d *demo) teardownState(ctx context.Context, db *dbv1alpha1.Database, name string) (map[string]bool, error) {
	present := map[string]bool{}
	var obj dbv1alpha1.Database
	err := d.client.Get(ctx, client.ObjectKeyFromObject(db), &obj)
	switch {
	case err == nil:
		present["Database/"+db.Name] = true
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get database %s: %w", db.Name, err)
	}
	var role, dbExists, grant bool
	err = d.pool.QueryRow(ctx, `SELECT
		EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1),
		EXISTS (SELECT 1 FROM pg_database WHERE datname = $1),
		EXISTS (SELECT 1 FROM pg_database d, aclexplode(d.datacl) a JOIN pg_roles r ON r.oid = a.grantee
			WHERE d.datname = $1 AND r.rolname = $2)`, name, grantee).Scan(&role, &dbExists, &grant)
	if err != nil {
		return nil, fmt.Errorf("look in PostgreSQL: %w", err)
	}
	present["role "+name], present["database "+name], present["grant to "+grantee] = role, dbExists, grant
	var s corev1.Secret
	err = d.client.Get(ctx, client.ObjectKey{Namespace: db.Namespace, Name: database.SecretName(db)}, &s)
	switch {
	case err == nil:
		present["Secret/"+s.Name] = true
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get the credentials secret: %w", err)
	}
	return present, nil
}

// noFailedDeletion fails if the operator reported a failed deletion step about the Database with uid
// (a step out of order fails in PostgreSQL: a role that owns a database cannot be dropped).
func (d *demo) noFailedDeletion(ctx context.Context, name string, uid types.UID) error {
	events, err := d.clients.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list events: %w", err)
	}
	for _, e := range events.Items {
		if e.Regarding.Kind != "Database" || e.Regarding.Name != name || e.Regarding.UID != uid || e.Type != corev1.EventTypeWarning {
			continue
		}
		if e.Reason == "DeleteFailed" || e.Reason == "DeletionFailed" {
			return fmt.Errorf("deleting Database %s: the operator reported %s: %s", name, e.Reason, e.Note)
		}
	}
	return nil
}

// keepDatabase creates the Database again for --keep and waits until its credentials connect.
func (d *demo) keepDatabase(ctx context.Context) error {
	db := sampleDatabase()
	if err := d.createDatabase(ctx, db); err != nil {
		return err
	}
	_, err := d.waitForCredentials(ctx, db)
	return err
}

// connect connects with the Secret's URI, as the Database's role, to its database.
func connect(ctx context.Context, secret *corev1.Secret) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return pgx.Connect(ctx, string(secret.Data[database.KeyURI]))
}

// pgMessage returns PostgreSQL's message in err, else err's text.
func pgMessage(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Severity + ": " + pgErr.Message + " (SQLSTATE " + pgErr.Code + ")"
	}
	return err.Error()
}
