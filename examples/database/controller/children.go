package controller

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/examples/database/api/v1alpha1"
	"github.com/convergo-dev/convergo/reconcile/graph"
)

// Node names of a Database's graph; each grant's is grantNode+"<role>".
const NodeRole, NodeDatabase, NodeSecret, grantNode = "role", "database", "credentials", "grant:"

// Keys of the credentials Secret.
const KeyUsername, KeyPassword, KeyHost, KeyPort, KeyDatabase, KeyURI = "username", "password", "host", "port", "database", "uri"

// DatabaseName returns the PostgreSQL name of db's database (and of its role): spec.databaseName,
// else "<namespace>_<name>" with "-" replaced by "_".
func DatabaseName(db *v1alpha1.Database) string {
	return cmp.Or(db.Spec.DatabaseName, strings.ReplaceAll(db.Namespace+"_"+db.Name, "-", "_"))
}

// SecretName returns the name of db's credentials Secret.
func SecretName(db *v1alpha1.Database) string { return db.Name + "-credentials" }

// children builds a Database's graph: the role, the database owned by it, one grant per spec.grants
// entry, and the credentials Secret once the database is ready. With deletionPolicy Retain the role,
// the database and the Secret are kept when the Database goes (grants are not: they are revoked).
type children struct {
	server      Server
	reader, api client.Reader // the manager's cached client and API reader
}

func (c *children) build(ctx context.Context, db *v1alpha1.Database) (*graph.Graph, error) {
	name := DatabaseName(db)
	password, err := c.password(ctx, db)
	if err != nil {
		return nil, err
	}
	pool, every := c.server.Pool, c.server.Interval
	g := graph.New(graph.WithExternalKinds(grants(pool)))
	role := graph.AddExternal(g, NodeRole, roles(pool), name, password).ObserveEvery(every)
	database := graph.AddExternal(g, NodeDatabase, databases(pool), name, name).DependsOn(NodeRole).ObserveEvery(every)
	for _, gr := range db.Spec.Grants {
		graph.AddExternal(g, grantNode+gr.Role, grants(pool), grantID(name, gr.Role), gr.Privileges).DependsOn(NodeDatabase).ObserveEvery(every)
	}
	secret := g.Add(NodeSecret, c.secret(db, name, password)).DependsOn(NodeDatabase)
	if db.Spec.DeletionPolicy == v1alpha1.DeletionPolicyRetain {
		role.KeepOnDelete()
		database.KeepOnDelete()
		secret.KeepOnDelete()
	}
	return g, nil
}

// password returns the password in db's Secret, read from the cache, else (it may not show a Secret
// just written) from the API server, else a new one.
func (c *children) password(ctx context.Context, db *v1alpha1.Database) (string, error) {
	key, s := client.ObjectKey{Namespace: db.Namespace, Name: SecretName(db)}, &corev1.Secret{}
	for _, r := range []client.Reader{c.reader, c.api} {
		if err := r.Get(ctx, key, s); client.IgnoreNotFound(err) != nil {
			return "", fmt.Errorf("read secret %s: %w", key, err)
		} else if p := s.Data[KeyPassword]; err == nil && len(p) > 0 {
			return string(p), nil
		}
	}
	return rand.Text(), nil
}

// secret returns db's credentials Secret.
func (c *children) secret(db *v1alpha1.Database, name, password string) *corev1.Secret {
	port := strconv.Itoa(c.server.Port)
	uri := url.URL{Scheme: "postgresql", User: url.UserPassword(name, password),
		Host: net.JoinHostPort(c.server.Host, port), Path: "/" + name, RawQuery: "sslmode=" + c.server.SSLMode}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: SecretName(db)}, Type: corev1.SecretTypeOpaque, StringData: map[string]string{
		KeyUsername: name, KeyPassword: password, KeyHost: c.server.Host, KeyPort: port, KeyDatabase: name, KeyURI: uri.String()}}
}
