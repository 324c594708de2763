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
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/convergo-dev/convergo/examples/database/api/v1alpha1"
	"github.com/convergo-dev/convergo/reconcile/graph"
)

// ident quotes a PostgreSQL identifier.
func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

// literal quotes a PostgreSQL string literal (standard_conforming_strings, the default since 9.1).
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// comment returns the statement putting owner's mark (graph.OwnerMark; none for "") in the comment of
// the kind ("ROLE", "DATABASE") called name: roles and databases carry it there.
func comment(kind, name, owner string) string {
	if owner == "" {
		return fmt.Sprintf("COMMENT ON %s %s IS NULL", kind, ident(name))
	}
	return fmt.Sprintf("COMMENT ON %s %s IS %s", kind, ident(name), literal(graph.OwnerMark(owner)))
}

// exec runs stmts as one transaction: PostgreSQL runs a batch as one.
func exec(ctx context.Context, pool *pgxpool.Pool, stmts ...string) error {
	b := &pgx.Batch{}
	for _, stmt := range stmts {
		b.Queue(stmt)
	}
	return pool.SendBatch(ctx, b).Close()
}

// observe scans the one row query finds into dest: an object that exists (what names it in errors).
func observe(ctx context.Context, pool *pgxpool.Pool, what, query string, args []any, dest ...any) (bool, error) {
	if err := pool.QueryRow(ctx, query, args...).Scan(dest...); errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("read %s: %w", what, err)
	}
	return true, nil
}

// observed is the Observation of an object that exists (ok), commented text, up to date or not, why.
func observed(ok bool, text string, upToDate bool, why string, err error) (graph.Observation, error) {
	obs := graph.Observation{Exists: ok, Owner: graph.OwnerFromMark(text), UpToDate: upToDate, Ready: true}
	if !upToDate {
		obs.Reason = why
	}
	return obs, err
}

// roles manages PostgreSQL login roles (every function of the three kinds is idempotent); the desired
// state is the password, held when the role logs in with it (checked against its SCRAM verifier).
func roles(pool *pgxpool.Pool) graph.External[string] {
	return graph.ExternalFuncs[string]{
		KindName: "postgres.role",
		ObserveFn: func(ctx context.Context, name, password string) (graph.Observation, error) {
			var login bool
			var verifier, text string
			ok, err := observe(ctx, pool, "role "+name, `SELECT rolcanlogin, coalesce(rolpassword, ''), coalesce(shobj_description(oid, 'pg_authid'), '')
				FROM pg_authid WHERE rolname = $1`, []any{name}, &login, &verifier, &text)
			return observed(ok, text, login && verifies(verifier, password), "its password or login differs from the Secret's", err)
		},
		ApplyFn: func(ctx context.Context, name, password string, found graph.Observation, owner string) error {
			verb := map[bool]string{false: "CREATE", true: "ALTER"}[found.Exists]
			return exec(ctx, pool, fmt.Sprintf("%s ROLE %s WITH LOGIN PASSWORD %s", verb, ident(name), literal(password)), comment("ROLE", name, owner))
		},
		DeleteFn: func(ctx context.Context, name string) error {
			return exec(ctx, pool, "DROP ROLE IF EXISTS "+ident(name))
		},
		ReleaseFn: func(ctx context.Context, name string) error { return exec(ctx, pool, comment("ROLE", name, "")) },
	}
}

// databases manages PostgreSQL databases; the desired state is the owner role. CREATE DATABASE cannot
// run in a transaction: a crash before the comment leaves an unmarked database, which the owner's
// record still names, so the next Apply marks it.
func databases(pool *pgxpool.Pool) graph.External[string] {
	return graph.ExternalFuncs[string]{
		KindName: "postgres.database",
		ObserveFn: func(ctx context.Context, name, wantOwner string) (graph.Observation, error) {
			var owner, text string
			ok, err := observe(ctx, pool, "database "+name, `SELECT pg_get_userbyid(datdba), coalesce(shobj_description(oid, 'pg_database'), '')
				FROM pg_database WHERE datname = $1`, []any{name}, &owner, &text)
			return observed(ok, text, owner == wantOwner, "owned by role "+owner, err)
		},
		ApplyFn: func(ctx context.Context, name, wantOwner string, found graph.Observation, owner string) error {
			stmt := fmt.Sprintf("CREATE DATABASE %s OWNER %s", ident(name), ident(wantOwner))
			if found.Exists {
				stmt = fmt.Sprintf("ALTER DATABASE %s OWNER TO %s", ident(name), ident(wantOwner))
			}
			if err := exec(ctx, pool, stmt); err != nil { // not in a transaction
				return err
			}
			return exec(ctx, pool, comment("DATABASE", name, owner))
		},
		DeleteFn: func(ctx context.Context, name string) error {
			return exec(ctx, pool, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", ident(name)))
		},
		ReleaseFn: func(ctx context.Context, name string) error { return exec(ctx, pool, comment("DATABASE", name, "")) },
	}
}

// grantID names the grant of role on database: it exists while role holds a privilege on database.
func grantID(database, role string) string { return database + "/" + role }

// grants manages the privileges of a role on a database, the owner's when the database is; the desired
// state is exactly those listed. Delete is called only for a grant Observe found: both exist.
func grants(pool *pgxpool.Pool) graph.External[[]v1alpha1.Privilege] {
	revoke := func(id string) string {
		database, role, _ := strings.Cut(id, "/")
		return fmt.Sprintf("REVOKE ALL ON DATABASE %s FROM %s", ident(database), ident(role))
	}
	return graph.ExternalFuncs[[]v1alpha1.Privilege]{
		KindName: "postgres.grant",
		ObserveFn: func(ctx context.Context, id string, want []v1alpha1.Privilege) (graph.Observation, error) {
			database, role, _ := strings.Cut(id, "/")
			var text string
			var held []string
			ok, err := observe(ctx, pool, "privileges of "+role+" on "+database, `SELECT coalesce(shobj_description(d.oid, 'pg_database'), ''),
				coalesce((SELECT array_agg(a.privilege_type ORDER BY a.privilege_type) FROM aclexplode(d.datacl) a
					JOIN pg_roles r ON r.oid = a.grantee WHERE r.rolname = $2), '{}')
				FROM pg_database d WHERE d.datname = $1`, []any{database, role}, &text, &held)
			wanted := privileges(want)
			return observed(ok && len(held) > 0, text, slices.Equal(held, wanted), fmt.Sprintf("%s holds %v, wants %v", role, held, wanted), err)
		},
		ApplyFn: func(ctx context.Context, id string, want []v1alpha1.Privilege, _ graph.Observation, _ string) error {
			database, role, _ := strings.Cut(id, "/")
			return exec(ctx, pool, revoke(id), fmt.Sprintf("GRANT %s ON DATABASE %s TO %s", strings.Join(privileges(want), ", "), ident(database), ident(role)))
		},
		DeleteFn: func(ctx context.Context, id string) error { return exec(ctx, pool, revoke(id)) },
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

// verifies reports whether password matches pg_authid.rolpassword's SCRAM-SHA-256 verifier,
// "SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>" (RFC 7677); nothing else verifies.
func verifies(verifier, password string) bool {
	f := strings.FieldsFunc(verifier, func(r rune) bool { return r == '$' || r == ':' })
	if len(f) != 5 || f[0] != "SCRAM-SHA-256" {
		return false
	}
	iterations, err := strconv.Atoi(f[1])
	salt, err1 := base64.StdEncoding.DecodeString(f[2])
	stored, err2 := base64.StdEncoding.DecodeString(f[3])
	if err != nil || err1 != nil || err2 != nil || iterations <= 0 {
		return false
	}
	salted, _ := pbkdf2.Key(sha256.New, password, salt, iterations, sha256.Size) // an error leaves nil: no match
	mac := hmac.New(sha256.New, salted)
	mac.Write([]byte("Client Key"))
	storedKey := sha256.Sum256(mac.Sum(nil))
	return subtle.ConstantTimeCompare(storedKey[:], stored) == 1
}
