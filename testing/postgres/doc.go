// Package postgres starts a private PostgreSQL server for tests, the way the rest of
// convergo/testing starts kube-apiserver: a fresh data directory made with initdb, a server started
// on 127.0.0.1 and a free port, stopped and removed when the test ends.
//
//	func TestStore(t *testing.T) {
//		srv := postgres.Start(t, postgres.WithSetting("max_connections", "20"))
//		db := open(t, srv.URL()) // postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable
//		...
//		srv.Stop(t)  // an outage: connections are refused
//		...
//		srv.Start(t) // back on the same port, with the same data
//		...
//		mark := srv.MarkLog()
//		srv.Kill(t)  // a crash: every server process gets SIGKILL, nothing is shut down
//		srv.Start(t) // crash recovery, then back on the same port, with the committed data
//		...
//		for _, st := range srv.Statements(t, mark) { // what clients ran since the mark
//			t.Log(st.Text, st.Parameters)
//		}
//	}
//
// Programs that are not tests (the demo, examples/demo, runs the Database operator on one) start a
// server with New and stop it with Close, which also removes its files; Start is New with t.Cleanup:
//
//	srv, err := postgres.New(ctx)
//	if err != nil {
//		return err // the server binaries are missing (the error says what to install), or it did not start
//	}
//	defer srv.Close()
//	pool, err := pgxpool.New(ctx, srv.URL())
//
// The server listens on 127.0.0.1 and its Unix socket, nothing else. The superuser postgres connects
// without a password; every other role must give its password (scram-sha-256, the default
// password_encryption), so credentials under test are checked as in production. The cluster is made with
// --locale=C and --encoding=UTF8, and runs with fsync=off (nothing of it is meant to survive the
// test) and log_statement=all, so that Statements finds every statement in the server log;
// WithSetting changes these and sets others.
//
// The server's main process, the postmaster, is a child of the test process: Kill reaps it, and
// Start after a crash (by Kill, or any other death of the postmaster) removes the lock files it left
// and recovers the data directory, as PostgreSQL does after a real crash.
//
// The server binaries (initdb, postgres) are looked up next to initdb on PATH, then in
// /usr/lib/postgresql/*/bin (Debian's layout; the highest version wins). On Debian: apt-get install
// -y postgresql.
//
// PostgreSQL refuses to run as root. When the test (or program) runs as root, initdb and the server
// run as the postgres system user if it exists, else as nobody, and the server's files are made over
// to that user.
//
// Tests that start a server are slow and need the binaries; keep them behind a build tag, as this
// package's own server tests are (go test -tags integration).
package postgres
