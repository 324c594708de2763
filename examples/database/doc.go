// Command database is the Database operator: it keeps, for each Database custom resource, a
// PostgreSQL role, a database owned by it, the grants the spec declares, and a Secret with the
// credentials and a connection URI, on the PostgreSQL server --postgres-url connects to.
//
//	POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres go run ./examples/database
//
// See package controller for what it does and examples/database/config for its CRD and RBAC.
package main
