package assets_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/convergo-dev/convergo/testing/assets"
)

// Ensure returns the directory named by KUBEBUILDER_ASSETS when it holds every requested component
// (here fake binaries that print a version); otherwise it looks in the cache and builds what is missing.
func ExampleEnsure() {
	dir, err := os.MkdirTemp("", "assets-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	fakes := map[assets.Component]string{
		assets.KubeAPIServer: "Kubernetes v1.37.0",
		assets.Etcd:          "etcd Version: 3.7.0",
	}
	for c, version := range fakes {
		script := fmt.Sprintf("#!/bin/sh\necho '%s'\n", version)
		if err := os.WriteFile(filepath.Join(dir, string(c)), []byte(script), 0o755); err != nil {
			panic(err)
		}
	}
	old, had := os.LookupEnv(assets.EnvAssets)
	os.Setenv(assets.EnvAssets, dir)
	defer func() {
		if had {
			os.Setenv(assets.EnvAssets, old)
		} else {
			os.Unsetenv(assets.EnvAssets)
		}
	}()

	got, err := assets.Ensure(context.Background(), assets.WithComponents(assets.KubeAPIServer, assets.Etcd))
	if err != nil {
		panic(err)
	}
	fmt.Println("uses KUBEBUILDER_ASSETS:", got == dir)
	// Output: uses KUBEBUILDER_ASSETS: true
}

func ExampleParseComponents() {
	all, _ := assets.ParseComponents("all")
	fmt.Println(all)
	some, _ := assets.ParseComponents("kube-apiserver,etcd")
	fmt.Println(some)
	_, err := assets.ParseComponents("kubelet")
	fmt.Println(err)
	// Output:
	// [kube-apiserver etcd kube-controller-manager kube-scheduler kwok kubectl jaeger]
	// [kube-apiserver etcd]
	// unknown component "kubelet" (known: kube-apiserver, etcd, kube-controller-manager, kube-scheduler, kwok, kubectl, jaeger, or all)
}
