// Package cluster runs a complete local Kubernetes control plane as processes on 127.0.0.1:
// etcd, kube-apiserver, kube-controller-manager (garbage collector, namespace, deployment,
// replicaset, statefulset, job, endpointslice, serviceaccount and the other default controllers),
// kube-scheduler, and kwok, which plays the kubelet for fake nodes so that pods are scheduled,
// become Ready and are finalized on deletion. Deployments reach Available and cascading deletion
// is real, on a laptop, with no containers.
//
// Start generates a fresh PKI in Go (a CA, serving and client certificates, a service-account
// key), reserves free ports (several test packages may run clusters at once), starts the
// components in dependency order with a readiness probe for each, creates the fake nodes, and
// returns once the nodes are Ready and the controllers have created the default ServiceAccount.
// Stop terminates the components in reverse order and reports any component that exited on its
// own meanwhile, except kwok: it keeps no state, and like a kubelet under a service manager it is
// restarted on the same port when it dies (kwok v0.8.0 can crash at start on a data race of its own),
// with a marker line in logs/kwok.log.
//
// The binaries (kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kwok) and kwok's
// stage configuration (kwok-stages.yaml) are read from the directory given with WithBinaryDir, or
// else from $KUBEBUILDER_ASSETS. Build them with
//
//	go run github.com/convergo-dev/convergo/testing/assets/cmd/convergo-assets -components all
//
// Most tests reach this package through the harness (harness.WithFullCluster); used directly:
//
//	func TestMain(m *testing.M) {
//		c, err := cluster.Start(context.Background(), cluster.WithNodes(3))
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err) // names the failing component, with its log tail
//			os.Exit(1)
//		}
//		code := m.Run()
//		if code != 0 {
//			fmt.Fprint(os.Stderr, c.LogTails(20))
//		}
//		if err := c.Stop(); err != nil {
//			fmt.Fprintln(os.Stderr, err)
//		}
//		os.Exit(code)
//	}
//
// c.Config is an admin *rest.Config and c.KubeconfigPath an admin kubeconfig (for kubectl).
//
// What the components do and spend: c.CPUTime(comp) is a component's CPU time so far (Linux),
// c.Metrics returns the metrics of kube-apiserver, kube-controller-manager or kube-scheduler (the
// controllers' work queues, for example), and c.CPUProfile records a CPU profile of one of them:
//
//	data, err := c.CPUProfile(ctx, cluster.ControllerManager, 10*time.Second)
//	// os.WriteFile("kcm.cpu", data, 0o644), then: go tool pprof -top kcm.cpu
//
// Fault hooks break the running control plane on purpose, for reliability tests:
//
//	err := c.RestartAPIServer(ctx)          // SIGKILL kube-apiserver, start it again on the same etcd
//	err = c.KillAPIServer()                 // ... or in two steps, doing something in between
//	err = c.StartAPIServer(ctx)
//	err = c.PauseEtcdFor(ctx, 10*time.Second) // SIGSTOP etcd, SIGCONT after 10 s (or PauseEtcd/ResumeEtcd)
package cluster
