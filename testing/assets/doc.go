// Package assets locates or builds the control-plane binaries that Convergo's tests run: kube-apiserver,
// kube-controller-manager and kube-scheduler (KubernetesVersion), etcd (EtcdVersion) and kwok
// (KwokVersion, with a stage configuration next to the binary), and kubectl of KubernetesVersion, so that
// the directory is a full stand-in for setup-envtest's (envtest's ControlPlane.KubeCtl() runs its
// kubectl). ClusterComponents are what a full local cluster runs; AllComponents adds kubectl.
//
// Binaries come only from the Go module proxy: Ensure builds each missing component from its Go module
// into a per-user cache (first build: several minutes for a Kubernetes binary; afterwards instant) and
// reuses prebuilt binaries when KUBEBUILDER_ASSETS or setup-envtest's directory already holds them.
// Every binary reports its version (--version; kubectl version --client) before it is trusted, and builds
// are serialised by a file lock so that many test packages can call Ensure at once.
//
//	dir, err := assets.Ensure(ctx) // kube-apiserver and etcd
//	if err != nil {
//		return err
//	}
//	env := &envtest.Environment{BinaryAssetsDirectory: dir}
//
//	// kubectl too, for envtest's helper: env.ControlPlane.KubeCtl().Run("get", "namespaces")
//	dir, err = assets.Ensure(ctx, assets.WithComponents(assets.KubeAPIServer, assets.Etcd, assets.Kubectl))
//
// The convergo-assets command (testing/assets/cmd/convergo-assets) does the same from the shell.
package assets
