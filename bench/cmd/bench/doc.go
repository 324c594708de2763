// Command bench measures Convergo's Welcome operator against two peers on one full local cluster
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok nodes, built from the Go
// module proxy by testing/assets): the Welcome operator an expert writes by hand with
// controller-runtime (bench/expert), the yardstick, and one written the way tutorials write
// operators (bench/baseline). By default it measures convergo, expert and baseline, in that
// order, and the report divides every other implementation's figures by the expert's.
//
//	go run ./bench/cmd/bench                        # N=50, prints a markdown table
//	go run ./bench/cmd/bench -n 2000 -out bench/results
//	go run ./bench/cmd/bench -impl convergo,baseline # convergo/baseline ratios, as before the expert
//	go run ./bench/cmd/bench -impl expert -json
//	go run ./bench/cmd/bench -n 200 -floor            # also what operators cannot shorten
//	go run ./bench/cmd/bench -n 200 -without-rollout  # only the managers' own requests
//
// For each implementation in turn it measures converge (N Welcomes created at once until all
// Ready), memory, restart (a fresh manager until every Welcome was reconciled, once the memory
// phase's objects are gone and the control plane is quiet), update
// (spec.replicas on all N until Ready) and delete (until no Welcome and no child is left), counting
// the manager's API requests per verb client side; it does so -rounds times (default
// bench.DefaultRounds, 4; the order of the implementations reversed every other round) and reports
// the medians. The table goes to stdout (the JSON with -json); with -out both are also written to
// <dir>/<date>-n<N>.md and .json. Progress goes to stderr. Before each converge phase it reads the
// control plane's idle CPU, and every phase reports the API server's CPU above idle.
//
// -floor measures what operators cannot shorten. First it rolls out N Deployments by hand on the warmed
// cluster, with no operator, and reports when all were available, then scales them to the update
// phase's replicas and reports when all were scaled: the cluster's own part of a converge and of an
// update phase. And after each restart phase it restarts a receiver on the implementation's
// objects, a manager that only lists and watches them and reads each Welcome once: the shortest
// restart of an operator that lists these objects whole ("restart floor" rows; the targets give each floor as a ratio of
// the expert's figure). -without-rollout runs
// kube-controller-manager without the controllers that act on the children, so that the API server
// serves only the managers' own requests (and the driver's); converge and update then end when every
// Welcome's status is written for its generation. -serverprofiles DIR records CPU profiles of
// kube-apiserver, kube-controller-manager and kube-scheduler through each converge, update and delete
// phase, consecutive profiles of 10 s each:
//
//	go run ./bench/cmd/bench -n 200 -rounds 1 -impl convergo,expert -serverprofiles /tmp/prof
//	go tool pprof -top /tmp/prof/convergo-r1-update-kube-controller-manager-*.cpu
//
// Flags: -n, -rounds, -nodes, -impl, -json, -out, -name, -timeout (per phase), -quiet, -workers, -crd,
// -v, -floor, -without-rollout, -cpuprofile, -cpuprofiles, -serverprofiles, -heapprofiles.
package main
