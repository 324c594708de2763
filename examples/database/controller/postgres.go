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

// The three kinds of PostgreSQL objects a Database gets, as graph.External implementations: roles,
// databases and a role's grants on a database. Each leaves the owner mark the graph gives it in a
// comment (COMMENT ON ROLE / DATABASE), reads it back in Observe, and is idempotent.

// markPrefix starts the comment that holds an object's owner mark.
const markPrefix = "convergo.dev/owner="

// ownerOf returns the owner mark in a comment, "" when it holds none.
func ownerOf(comment string) string {
	mark, ok := strings.CutPrefix(comment, markPrefix)
	if !ok {
		return ""
	}
	return mark
}

// ident quotes a PostgreSQL identifier.
func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

// literal quotes a PostgreSQL string literal (standard_conforming_strings, the default since 9.1).
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// RoleState is the desired state of a login role: its password.
type RoleState struct{ Password string }

// Roles manages PostgreSQL login roles.
type Roles struct{ Pool *pgxpool.Pool }

// Kind names the kind in owners' records.
func (Roles) Kind() string { return "postgres.role" }

// Observe reads the role: it holds its intent when it can log in with want's password (checked
// against its SCRAM-SHA-256 verifier, never sent anywhere).
func (r Roles) Observe(ctx context.Context, name string, want RoleState) (graph.Observation, error) {
	var (
		canLogin         bool
		verifier, remark string
	)
	err := r.Pool.QueryRow(ctx, `SELECT rolcanlogin, coalesce(rolpassword, ''), coalesce(shobj_description(oid, 'pg_authid'), '')
		FROM pg_authid WHERE rolname = $1`, name).Scan(&canLogin, &verifier, &remark)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return graph.Observation{}, nil
	case err != nil:
		return graph.Observation{}, fmt.Errorf("read role %s: %w", name, err)
	}
	obs := graph.Observation{Exists: true, Owner: ownerOf(remark), Ready: true}
	obs.UpToDate = canLogin && verifies(verifier, want.Password)
	if !obs.UpToDate {
		obs.Reason = "its password or login differs from the Secret's"
	}
	return obs, nil
}

// Apply creates the role or sets its password and login, and marks it.
func (r Roles) Apply(ctx context.Context, name string, want RoleState, owner string) error {
	return pgx.BeginFunc(ctx, r.Pool, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, name).Scan(&exists); err != nil {
			return err
		}
		verb := "CREATE"
		if exists {
			verb = "ALTER"
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf("%s ROLE %s WITH LOGIN PASSWORD %s", verb, ident(name), literal(want.Password))); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, fmt.Sprintf("COMMENT ON ROLE %s IS %s", ident(name), literal(markPrefix+owner)))
		return err
	})
}

// Delete drops the role.
func (r Roles) Delete(ctx context.Context, name string) error {
	_, err := r.Pool.Exec(ctx, "DROP ROLE IF EXISTS "+ident(name))
	return err
}

// Release takes the owner mark off the role.
func (r Roles) Release(ctx context.Context, name string) error {
	return release(ctx, r.Pool, "ROLE", `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, name)
}

// DatabaseState is the desired state of a database: its owner role.
type DatabaseState struct{ Owner string }

// Databases manages PostgreSQL databases.
type Databases struct{ Pool *pgxpool.Pool }

// Kind names the kind in owners' records.
func (Databases) Kind() string { return "postgres.database" }

// Observe reads the database: it holds its intent when want.Owner owns it.
func (d Databases) Observe(ctx context.Context, name string, want DatabaseState) (graph.Observation, error) {
	var owner, remark string
	err := d.Pool.QueryRow(ctx, `SELECT pg_get_userbyid(datdba), coalesce(shobj_description(oid, 'pg_database'), '')
		FROM pg_database WHERE datname = $1`, name).Scan(&owner, &remark)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return graph.Observation{}, nil
	case err != nil:
		return graph.Observation{}, fmt.Errorf("read database %s: %w", name, err)
	}
	obs := graph.Observation{Exists: true, Owner: ownerOf(remark), UpToDate: owner == want.Owner, Ready: true}
	if !obs.UpToDate {
		obs.Reason = fmt.Sprintf("owned by role %s", owner)
	}
	return obs, nil
}

// Apply creates the database owned by want.Owner, or gives it to that role, and marks it. CREATE
// DATABASE cannot run in a transaction: a crash between it and the comment leaves an unmarked database,
// which the owner's record still names, so the next Apply marks it.
func (d Databases) Apply(ctx context.Context, name string, want DatabaseState, owner string) error {
	var exists bool
	if err := d.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return err
	}
	stmt := fmt.Sprintf("CREATE DATABASE %s OWNER %s", ident(name), ident(want.Owner))
	if exists {
		stmt = fmt.Sprintf("ALTER DATABASE %s OWNER TO %s", ident(name), ident(want.Owner))
	}
	if _, err := d.Pool.Exec(ctx, stmt); err != nil {
		return err
	}
	_, err := d.Pool.Exec(ctx, fmt.Sprintf("COMMENT ON DATABASE %s IS %s", ident(name), literal(markPrefix+owner)))
	return err
}

// Delete drops the database, closing its connections.
func (d Databases) Delete(ctx context.Context, name string) error {
	_, err := d.Pool.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", ident(name)))
	return err
}

// Release takes the owner mark off the database.
func (d Databases) Release(ctx context.Context, name string) error {
	return release(ctx, d.Pool, "DATABASE", `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name)
}

// GrantState is the desired state of a grant: the privileges a role has on a database, exactly.
type GrantState struct{ Privileges []v1alpha1.Privilege }

// Grants manages the privileges of a role on a database. A grant is named "<database>/<role>"; it
// exists while the role holds any privilege on the database, and it is the owner's when the database
// is (a grant carries no comment).
type Grants struct{ Pool *pgxpool.Pool }

// Kind names the kind in owners' records.
func (Grants) Kind() string { return "postgres.grant" }

// GrantID names the grant of role on database.
func GrantID(database, role string) string { return database + "/" + role }

func splitGrant(id string) (database, role string, err error) {
	database, role, ok := strings.Cut(id, "/")
	if !ok {
		return "", "", fmt.Errorf("grant %q is not <database>/<role>", id)
	}
	return database, role, nil
}

// Observe reads the privileges the role holds on the database.
func (g Grants) Observe(ctx context.Context, id string, want GrantState) (graph.Observation, error) {
	database, role, err := splitGrant(id)
	if err != nil {
		return graph.Observation{}, err
	}
	var (
		remark string
		held   []string
	)
	err = g.Pool.QueryRow(ctx, `SELECT coalesce(shobj_description(d.oid, 'pg_database'), ''),
		coalesce((SELECT array_agg(a.privilege_type ORDER BY a.privilege_type) FROM aclexplode(d.datacl) a
			JOIN pg_roles r ON r.oid = a.grantee WHERE r.rolname = $2), '{}')
		FROM pg_database d WHERE d.datname = $1`, database, role).Scan(&remark, &held)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return graph.Observation{}, nil
	case err != nil:
		return graph.Observation{}, fmt.Errorf("read privileges of %s on %s: %w", role, database, err)
	}
	wanted := privileges(want.Privileges)
	obs := graph.Observation{Exists: len(held) > 0, Owner: ownerOf(remark), UpToDate: slices.Equal(held, wanted), Ready: true}
	if !obs.UpToDate {
		obs.Reason = fmt.Sprintf("%s holds %v, wants %v", role, held, wanted)
	}
	return obs, nil
}

// Apply sets the role's privileges on the database to want's, exactly.
func (g Grants) Apply(ctx context.Context, id string, want GrantState, _ string) error {
	database, role, err := splitGrant(id)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, g.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, fmt.Sprintf("REVOKE ALL ON DATABASE %s FROM %s", ident(database), ident(role))); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, fmt.Sprintf("GRANT %s ON DATABASE %s TO %s", strings.Join(privileges(want.Privileges), ", "), ident(database), ident(role)))
		return err
	})
}

// Delete revokes every privilege of the role on the database.
func (g Grants) Delete(ctx context.Context, id string) error {
	database, role, err := splitGrant(id)
	if err != nil {
		return err
	}
	var both bool
	if err := g.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) AND EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $2)`,
		database, role).Scan(&both); err != nil || !both {
		return err
	}
	_, err = g.Pool.Exec(ctx, fmt.Sprintf("REVOKE ALL ON DATABASE %s FROM %s", ident(database), ident(role)))
	return err
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

// release removes the comment of the object kind ("ROLE", "DATABASE") called name, if it exists.
func release(ctx context.Context, pool *pgxpool.Pool, kind, existsQuery, name string) error {
	var exists bool
	if err := pool.QueryRow(ctx, existsQuery, name).Scan(&exists); err != nil || !exists {
		return err
	}
	_, err := pool.Exec(ctx, fmt.Sprintf("COMMENT ON %s %s IS NULL", kind, ident(name)))
	return err
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
