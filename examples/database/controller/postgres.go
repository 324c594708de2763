package controller

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/convergo-dev/convergo/examples/database/api/v1alpha1"
	"github.com/convergo-dev/convergo/reconcile/graph"
)

// The three kinds of PostgreSQL objects a Database gets, as graph.External functions: roles,
// databases and a role's grants on a database. Roles and databases carry the owner mark in their
// comment (graph.OwnerMark); every function is idempotent.

// ident quotes a PostgreSQL identifier.
func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

// literal quotes a PostgreSQL string literal (standard_conforming_strings, the default since 9.1).
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// exec runs statements in order, in one transaction when tx is set.
func exec(ctx context.Context, pool *pgxpool.Pool, tx bool, stmts ...string) error {
	run := func(q interface {
		Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	}) error {
		for _, stmt := range stmts {
			if _, err := q.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		return nil
	}
	if !tx {
		return run(pool)
	}
	return pgx.BeginFunc(ctx, pool, func(t pgx.Tx) error { return run(t) })
}

// observe reads one row of query about name; a missing row is an object that does not exist.
func observe(ctx context.Context, pool *pgxpool.Pool, what, query string, args []any, dest ...any) (bool, error) {
	err := pool.QueryRow(ctx, query, args...).Scan(dest...)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s: %w", what, err)
	}
	return true, nil
}

// roleState is the desired state of a login role: its password.
type roleState struct{ password string }

// roles manages PostgreSQL login roles. A role holds its intent when it can log in with the wanted
// password (checked against its SCRAM-SHA-256 verifier, never sent anywhere).
func roles(pool *pgxpool.Pool) graph.External[roleState] {
	return graph.ExternalFuncs[roleState]{
		KindName: "postgres.role",
		ObserveFn: func(ctx context.Context, name string, want roleState) (graph.Observation, error) {
			var login bool
			var verifier, comment string
			ok, err := observe(ctx, pool, "role "+name, `SELECT rolcanlogin, coalesce(rolpassword, ''), coalesce(shobj_description(oid, 'pg_authid'), '')
				FROM pg_authid WHERE rolname = $1`, []any{name}, &login, &verifier, &comment)
			obs := graph.Observation{Exists: ok, Owner: graph.OwnerFromMark(comment), Ready: true, UpToDate: login && verifies(verifier, want.password)}
			if !obs.UpToDate {
				obs.Reason = "its password or login differs from the Secret's"
			}
			return obs, err
		},
		ApplyFn: func(ctx context.Context, name string, want roleState, found graph.Observation, owner string) error {
			verb := "CREATE"
			if found.Exists {
				verb = "ALTER"
			}
			return exec(ctx, pool, true, fmt.Sprintf("%s ROLE %s WITH LOGIN PASSWORD %s", verb, ident(name), literal(want.password)),
				fmt.Sprintf("COMMENT ON ROLE %s IS %s", ident(name), literal(graph.OwnerMark(owner))))
		},
		DeleteFn: func(ctx context.Context, name string) error {
			return exec(ctx, pool, false, "DROP ROLE IF EXISTS "+ident(name))
		},
		ReleaseFn: func(ctx context.Context, name string) error {
			return exec(ctx, pool, false, "COMMENT ON ROLE "+ident(name)+" IS NULL")
		},
	}
}

// databases manages PostgreSQL databases; the desired state is the owner role. CREATE DATABASE cannot
// run in a transaction: a crash before the comment leaves an unmarked database, which the owner's
// record still names, so the next Apply marks it.
func databases(pool *pgxpool.Pool) graph.External[string] {
	return graph.ExternalFuncs[string]{
		KindName: "postgres.database",
		ObserveFn: func(ctx context.Context, name, wantOwner string) (graph.Observation, error) {
			var owner, comment string
			ok, err := observe(ctx, pool, "database "+name, `SELECT pg_get_userbyid(datdba), coalesce(shobj_description(oid, 'pg_database'), '')
				FROM pg_database WHERE datname = $1`, []any{name}, &owner, &comment)
			obs := graph.Observation{Exists: ok, Owner: graph.OwnerFromMark(comment), UpToDate: owner == wantOwner, Ready: true}
			if !obs.UpToDate {
				obs.Reason = fmt.Sprintf("owned by role %s", owner)
			}
			return obs, err
		},
		ApplyFn: func(ctx context.Context, name, wantOwner string, found graph.Observation, owner string) error {
			stmt := fmt.Sprintf("CREATE DATABASE %s OWNER %s", ident(name), ident(wantOwner))
			if found.Exists {
				stmt = fmt.Sprintf("ALTER DATABASE %s OWNER TO %s", ident(name), ident(wantOwner))
			}
			return exec(ctx, pool, false, stmt, fmt.Sprintf("COMMENT ON DATABASE %s IS %s", ident(name), literal(graph.OwnerMark(owner))))
		},
		DeleteFn: func(ctx context.Context, name string) error {
			return exec(ctx, pool, false, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", ident(name)))
		},
		ReleaseFn: func(ctx context.Context, name string) error {
			return exec(ctx, pool, false, "COMMENT ON DATABASE "+ident(name)+" IS NULL")
		},
	}
}

// GrantID names the grant of role on database: grants are named "<database>/<role>". A grant exists
// while the role holds any privilege on the database, and is the owner's when the database is.
func GrantID(database, role string) string { return database + "/" + role }

// grants manages the privileges of a role on a database; the desired state is exactly the privileges
// listed.
func grants(pool *pgxpool.Pool) graph.External[[]v1alpha1.Privilege] {
	return graph.ExternalFuncs[[]v1alpha1.Privilege]{
		KindName: "postgres.grant",
		ObserveFn: func(ctx context.Context, id string, want []v1alpha1.Privilege) (graph.Observation, error) {
			database, role, _ := strings.Cut(id, "/")
			var comment string
			var held []string
			ok, err := observe(ctx, pool, "privileges of "+role+" on "+database, `SELECT coalesce(shobj_description(d.oid, 'pg_database'), ''),
				coalesce((SELECT array_agg(a.privilege_type ORDER BY a.privilege_type) FROM aclexplode(d.datacl) a
					JOIN pg_roles r ON r.oid = a.grantee WHERE r.rolname = $2), '{}')
				FROM pg_database d WHERE d.datname = $1`, []any{database, role}, &comment, &held)
			wanted := privileges(want)
			obs := graph.Observation{Exists: ok && len(held) > 0, Owner: graph.OwnerFromMark(comment), UpToDate: slices.Equal(held, wanted), Ready: true}
			if !obs.UpToDate {
				obs.Reason = fmt.Sprintf("%s holds %v, wants %v", role, held, wanted)
			}
			return obs, err
		},
		ApplyFn: func(ctx context.Context, id string, want []v1alpha1.Privilege, _ graph.Observation, _ string) error {
			database, role, _ := strings.Cut(id, "/")
			return exec(ctx, pool, true, fmt.Sprintf("REVOKE ALL ON DATABASE %s FROM %s", ident(database), ident(role)),
				fmt.Sprintf("GRANT %s ON DATABASE %s TO %s", strings.Join(privileges(want), ", "), ident(database), ident(role)))
		},
		// Called only for a grant Observe found, whose database and role exist.
		DeleteFn: func(ctx context.Context, id string) error {
			database, role, _ := strings.Cut(id, "/")
			return exec(ctx, pool, false, fmt.Sprintf("REVOKE ALL ON DATABASE %s FROM %s", ident(database), ident(role)))
		},
	}
}

// privileges returns the privilege names sorted, without duplicates.
func privileges(ps []v1alpha1.Privilege) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, string(p))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// verifies reports whether password matches a SCRAM-SHA-256 verifier as PostgreSQL stores it in
// pg_authid.rolpassword: "SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>" (RFC 5802,
// RFC 7677). Any other format (an MD5 hash, none) does not verify, so the password is set again.
func verifies(verifier, password string) bool {
	rest, ok := strings.CutPrefix(verifier, "SCRAM-SHA-256$")
	if !ok {
		return false
	}
	params, keys, ok := strings.Cut(rest, "$")
	if !ok {
		return false
	}
	iterText, saltText, ok1 := strings.Cut(params, ":")
	storedText, _, ok2 := strings.Cut(keys, ":")
	iterations, err := strconv.Atoi(iterText)
	if !ok1 || !ok2 || err != nil || iterations <= 0 {
		return false
	}
	salt, err1 := base64.StdEncoding.DecodeString(saltText)
	stored, err2 := base64.StdEncoding.DecodeString(storedText)
	if err1 != nil || err2 != nil {
		return false
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, salted)
	mac.Write([]byte("Client Key"))
	storedKey := sha256.Sum256(mac.Sum(nil))
	return subtle.ConstantTimeCompare(storedKey[:], stored) == 1
}
