// Command shardbench measures what sharding saves a replica of the Welcome operator: on one full
// local cluster (testing/harness WithFullCluster: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok nodes), it creates N Welcomes, runs the example's binary as one unsharded
// process until every Welcome is Ready and reads its live heap, then runs R sharded processes
// (--shard-ring) until every Welcome is Ready under the member the ring assigns it to, and reads each
// replica's live heap and share. Heaps come from each process's /debug/pprof/heap?debug=1&gc=1 (after
// a garbage collection), the smallest of three reads.
//
//	go run ./bench/cmd/shardbench -n 1500 -replicas 3 -out bench/results
//
// The report (markdown) goes to stdout, and with -out to <dir>/<date>-sharding-n<N>.md.
package main
