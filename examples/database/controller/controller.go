// Package controller is the Database operator's controller: for each Database it keeps a PostgreSQL
// role, a database owned by it, the grants the spec declares, and a Secret with the role's
// credentials, as one graph: role -> database -> grant:<role>... and credentials (the Secret).
//
// PostgreSQL sends no watch events, so each Database's objects are observed again every
// Server.Interval; a dropped role, a changed password or a revoked grant is repaired then. An object
// without this Database's owner mark is never taken over nor dropped. Deleting a Database revokes its
// grants, drops its database, then its role, then removes the finalizer; with deletionPolicy Retain
// the database, the role and the Secret stay.
package controller

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/convergo-dev/convergo/examples/database/api/v1alpha1"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/childcache"
	"github.com/convergo-dev/convergo/reconcile/graph"
)

// Name is the controller's name: field manager, event source, metrics label, children's managed-by.
const Name = "database-operator"

// +kubebuilder:rbac:groups=db.convergo.dev,resources=databases,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=db.convergo.dev,resources=databases/status,verbs=patch
// +kubebuilder:rbac:groups=db.convergo.dev,resources=databases/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Server is the PostgreSQL server the operator manages databases on.
type Server struct {
	// Pool connects as a role that may create roles and databases (CREATEROLE and CREATEDB).
	Pool *pgxpool.Pool
	// Host and Port are where applications reach the server: they go into the credentials Secrets.
	Host string
	Port int
	// SSLMode is the sslmode of the URI in the Secrets; default "prefer".
	SSLMode string
	// Interval is how often each Database's objects are observed again for drift; default one minute
	// (graph.Node.ObserveEvery's).
	Interval time.Duration
}

// CacheOptions shapes the manager's cache: of Secrets, the child kind (declared here only), just this
// operator's children.
func CacheOptions(opts *cache.Options) {
	childcache.Configure(opts, &corev1.Secret{})
}

// Setup returns the function that registers the Database controller with a manager, managing
// databases on server. Its finalizer, the default db.convergo.dev/finalizer, holds a Database until
// its grants, database and role are gone from PostgreSQL (or released, under deletionPolicy Retain).
//
//	err := controller.Setup(controller.Server{Pool: pool, Host: "db.example", Port: 5432})(mgr)
func Setup(server Server) func(ctrl.Manager) error {
	return func(mgr ctrl.Manager) error {
		if server.Pool == nil {
			return fmt.Errorf("set up database controller: Server.Pool is nil: connect with pgxpool.New first")
		}
		server.SSLMode = cmp.Or(server.SSLMode, "prefer")
		var kinds cache.Options
		CacheOptions(&kinds)
		c := &children{server: server, reader: mgr.GetClient(), api: mgr.GetAPIReader()}
		r := reconcile.NewReconciler(mgr, reconcile.Hooks[*v1alpha1.Database]{
			Children:  c.build,
			Status:    fillStatus,
			Suspended: func(db *v1alpha1.Database) bool { return db.Spec.Suspend },
		}, reconcile.WithName(Name), reconcile.WithOwns(childcache.Kinds(kinds)...))
		return r.SetupWithManager(mgr) // its errors name the controller
	}
}

// fillStatus records the names applications need.
func fillStatus(_ context.Context, db *v1alpha1.Database, _ *graph.Result) error {
	db.Status.DatabaseName, db.Status.SecretName = DatabaseName(db), SecretName(db)
	return nil
}
