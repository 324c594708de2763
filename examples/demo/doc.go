// Command demo shows both example operators at work on a complete local cluster, with no containers
// and nothing to install but Go:
//
//	make demo                    # or: go run ./examples/demo
//	make demo ARGS=--keep        # leave it running and use kubectl
//	make demo ARGS=--serve-page  # also serve the Welcome's page at http://localhost:8088/hello/
//
// It builds (or finds) the control-plane binaries with testing/assets, starts etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok fake nodes with testing/cluster, installs the
// Memcached and Welcome CRDs, runs both operators in one manager, and then:
//
//  1. applies the samples in a namespace that enforces the "restricted" Pod Security Standard; the
//     Welcome is Stalled (SecretNotFound) until its password Secret exists, which the demo then
//     creates with a random password it never prints;
//  2. prints a live status table (kind, name, ready replicas, conditions) until everything is Ready;
//  3. scales both up and waits for Ready again;
//  4. with --serve-page, runs the Welcome's web server as a local process with the configuration the
//     operator rendered (examples/welcome/localweb: the container's environment, the page from its
//     ConfigMap, the password from its Secret), prints the URL and checks the page; then renames the
//     Welcome and, after the operator's rollout, restarts the server and checks the new greeting;
//  5. deletes both and shows the children disappear in reverse dependency order: the Welcome's
//     Deployment, then its page and Service; the Memcached's Service, then its Deployment.
//
// It exits 0 when every step went as expected. With --keep it applies the samples again, prints the
// kubeconfig path and runs until interrupted; with --serve-page too, the page stays up and follows each
// rollout of the Welcome. Operator logs go to demo-run/operators.log, the web server's to
// demo-run/welcome-web.log and the cluster's files to demo-run/cluster.
package main
