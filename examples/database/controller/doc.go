// Package controller is the Database operator's controller: for each Database it keeps a PostgreSQL
// role, a database owned by it, the grants the spec declares, and a Secret with the role's
// credentials, as one graph of external nodes and a cluster child:
//
//	role -> database -> grant:<role>...
//	                 -> credentials (Secret)
//
// PostgreSQL sends no watch events, so each Database's objects are observed again every
// Server.Interval; a dropped role, a changed password or a revoked grant is repaired then. A database
// or role that exists without this Database's owner mark is never taken over nor dropped. Deleting a
// Database revokes its grants, drops its database, then its role, and only then removes the finalizer;
// with deletionPolicy Retain the database, the role and the Secret stay.
//
//	pool, err := pgxpool.New(ctx, "postgres://postgres@db.example:5432/postgres")
//	err = controller.Setup(controller.Server{Pool: pool, Host: "db.example", Port: 5432})(mgr)
package controller
