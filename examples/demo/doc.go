// Command demo shows the example operators at work on a complete local cluster, with no containers
// and nothing to install but Go and PostgreSQL's server binaries (Debian's postgresql; as root, make
// demo installs it):
//
//	make demo                    # or: go run ./examples/demo
//	make demo ARGS=--keep        # leave it running and use kubectl
//	make demo ARGS=--serve-page  # also serve the Welcome's page at http://localhost:8088/hello/
//
// It starts a private PostgreSQL server with testing/postgres (failing at once, with what to install,
// when the server binaries are missing), builds (or finds) the control-plane binaries with
// testing/assets, starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok fake
// nodes with testing/cluster, installs the Memcached, Welcome and Database CRDs, runs the three
// operators in one manager (the Database operator on the private PostgreSQL, observing it every 2s),
// and then:
//
//  1. applies the samples in a namespace that enforces the "restricted" Pod Security Standard; the
//     Welcome is Stalled (SecretNotFound) until its password Secret exists, which the demo then
//     creates with a random password it never prints;
//  2. prints a live status table (kind, name, ready replicas, conditions) until everything is Ready;
//  3. scales both up and waits for Ready again; the operators' traces go to a private Jaeger
//     (testing/jaeger; --traces=false skips it), and the demo reads back and prints the span tree of
//     the reconcile that scaled the Welcome: the reconcile, its trigger, the node spans with their
//     verdicts and the API requests under them, and where to query every trace;
//  4. with --serve-page, runs the Welcome's web server as a local process with the configuration the
//     operator rendered (examples/welcome/localweb: the container's environment, the page from its
//     ConfigMap, the password from its Secret), prints the URL and checks the page; then renames the
//     Welcome and, after the operator's rollout, restarts the server and checks the new greeting;
//  5. deletes both and shows the children disappear in reverse dependency order: the Welcome's
//     Deployment, then its page and Service; the Memcached's Service, then its Deployment;
//  6. creates Database orders, which gets a PostgreSQL role, a database owned by it, a grant to an
//     existing role and a Secret orders-credentials, and prints the status table until it is Ready;
//  7. uses the credentials as an application would: connects with the Secret's uri (printed with the
//     password masked), creates a table and reads it back;
//  8. changes the role's password as the admin, shows the Secret's credentials refused, and waits until
//     the operator has set the password back and they connect again;
//  9. deletes the Database and shows it go in order: the grant revoked and the Secret deleted, the
//     database dropped, then the role, the finalizer removed last, with the statements from
//     PostgreSQL's log (log_statement = ddl during the deletion only), and checks that the database
//     and the role are gone from PostgreSQL;
//  10. starts two member clusters (a kube-apiserver and etcd each), names them in the local cluster,
//     the hub, by kubeconfig Secrets, and runs the tenancy operator (examples/tenancy): Tenant payments
//     gets its namespace, quota and admins' binding in both members; moved out of one, its quota and
//     binding go there and the namespace stays; deleted, the same in the other, finalizer last.
//
// It exits 0 when every step went as expected. With --keep it applies the samples and creates the
// Database again, prints the kubeconfig path and how to connect with psql, and runs until interrupted;
// with --serve-page too, the page stays up and follows each rollout of the Welcome. Operator logs go to
// demo-run/operators.log, the web server's to demo-run/welcome-web.log, PostgreSQL's to
// demo-run/postgres.log (when it stops) and the cluster's files to demo-run/cluster; PostgreSQL's
// files are removed when the demo ends.
package main
