package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/convergo-dev/convergo/testing/postgres"
)

// A test starts a server, connects to URL with its driver of choice, and may stop and start the
// server to see how the code under test copes with an outage. The server is stopped and its files
// removed when the test ends.
func ExampleStart() {
	testStore := func(t *testing.T) {
		srv := postgres.Start(t)
		dsn := srv.URL() // postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable
		_ = dsn          // sql.Open("pgx", dsn), pgxpool.New(ctx, dsn), ...

		srv.Stop(t)  // connections are refused now
		srv.Start(t) // same port, same data
	}
	_ = testStore
}

// A program that is not a test starts a server with New and closes it when done: Close stops the
// server and removes its files.
func ExampleNew() {
	run := func(ctx context.Context) error {
		srv, err := postgres.New(ctx)
		if err != nil {
			return err // for example: the server binaries are not installed
		}
		defer srv.Close()
		fmt.Println("connect to", srv.URL()) // pgxpool.New(ctx, srv.URL()), ...
		return nil
	}
	_ = run
}

// A test crashes the server midway and checks what the code under test ran, then and after the
// restart. Kill sends SIGKILL to every server process; Start recovers the data directory.
func ExampleServer_Kill() {
	testCrash := func(t *testing.T) {
		srv := postgres.Start(t)
		mark := srv.MarkLog()
		// ... the code under test starts its work on srv.URL() ...
		srv.Kill(t)  // connections break; what was committed stays
		srv.Start(t) // same port, same data, after crash recovery
		// ... the code under test retries ...
		for _, st := range srv.Statements(t, mark) {
			t.Logf("%s %s", st.Text, st.Parameters) // each statement once, in the order the server logged them
		}
	}
	_ = testCrash
}
