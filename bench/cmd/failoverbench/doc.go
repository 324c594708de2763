// Command failoverbench measures how long the survivors of a sharded Welcome operator take to take a
// killed replica's objects over. On one full local cluster (testing/harness WithFullCluster: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok nodes) it runs the example's binary
// as R ring members at the default Lease timings (15 s / 10 s / 2 s), each holding about P Welcomes,
// then, each round, kills one member with SIGKILL, changes every Welcome it held and watches until
// each one's Deployment carries the change, labelled with the survivor the ring names. It reports,
// per round:
//
//   - from the victim's last renewal (its Lease's renewTime) to the fence, to the last claim of its
//     Welcomes, and to the last Deployment applied;
//   - the take-over work: for the slowest survivor, from its last claim to the last Deployment of
//     its share applied, with the size of its share.
//
// The killed member is then started again, and the next round waits until the ring has handed its
// share back. Times come from the bench's watches, a few milliseconds after the writes.
//
//	go run ./bench/cmd/failoverbench -per-member 100 -members 3 -rounds 3
//
// The report (markdown) goes to stdout, and with -out to <dir>/<date>-failover-p<P>.md. It is never
// part of make test.
package main
