package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// object decodes a YAML manifest as the dynamic client returns it.
func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatalf("decode %s: %v", manifest, err)
	}
	// Integers as the API machinery decodes them (int64), not as float64.
	j, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestJudge(t *testing.T) {
	type verdict struct {
		Ready  bool
		Check  string
		Reason string
	}
	tests := map[string]struct {
		manifest string
		want     verdict
	}{
		"available deployment": {
			manifest: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2}, spec: {replicas: 2},
				status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2}}`,
			want: verdict{true, "DeploymentAvailable", ""},
		},
		"deployment rolling out": {
			manifest: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, generation: 2}, spec: {replicas: 2},
				status: {observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 1}}`,
			want: verdict{false, "DeploymentAvailable", "1/2 replicas available"},
		},
		"statefulset scaling": {
			manifest: `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: s, generation: 1}, spec: {replicas: 3},
				status: {observedGeneration: 1, replicas: 3, readyReplicas: 2}}`,
			want: verdict{false, "StatefulSetReady", "2/3 replicas ready"},
		},
		"daemonset rolled out": {
			manifest: `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: ds, generation: 3},
				status: {observedGeneration: 3, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3}}`,
			want: verdict{true, "DaemonSetReady", ""},
		},
		"daemonset updating": {
			manifest: `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: ds, generation: 3},
				status: {observedGeneration: 3, desiredNumberScheduled: 3, updatedNumberScheduled: 1, numberAvailable: 3}}`,
			want: verdict{false, "DaemonSetReady", "1/3 pods updated"},
		},
		"daemonset not observed": {
			manifest: `{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: ds, generation: 4},
				status: {observedGeneration: 3, desiredNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3}}`,
			want: verdict{false, "DaemonSetReady", "waiting for observedGeneration 4 (at 3)"},
		},
		"failed job": {
			manifest: `{apiVersion: batch/v1, kind: Job, metadata: {name: j},
				status: {conditions: [{type: Failed, status: "True", reason: BackoffLimitExceeded}]}}`,
			want: verdict{false, "JobComplete", "job failed: BackoffLimitExceeded"},
		},
		"service without cluster IP": {
			manifest: `{apiVersion: v1, kind: Service, metadata: {name: s}, spec: {type: ClusterIP}}`,
			want:     verdict{false, "ServiceReady", "no cluster IP yet"},
		},
		"custom resource with a Ready condition": {
			manifest: `{apiVersion: cache.convergo.dev/v1alpha1, kind: Memcached, metadata: {name: m, generation: 1},
				status: {conditions: [{type: Ready, status: "False", reason: WaitingForDependencies, message: "deployment: 0/3"}]}}`,
			want: verdict{false, "ConditionsReady", "Ready=False: WaitingForDependencies: deployment: 0/3"},
		},
		"custom resource definition established": {
			manifest: `{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: c},
				status: {conditions: [{type: Established, status: "True"}]}}`,
			want: verdict{true, "ConditionsReady", ""},
		},
		"config map": {
			manifest: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: b}}`,
			want:     verdict{true, "exists", ""},
		},
		"custom resource with other conditions only": {
			manifest: `{apiVersion: example.com/v1, kind: Thing, metadata: {name: t}, status: {conditions: [{type: Synced, status: "False"}]}}`,
			want:     verdict{true, "exists", ""},
		},
		"child being deleted": {
			manifest: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, deletionTimestamp: "2026-01-01T00:00:00Z", finalizers: [x]}}`,
			want:     verdict{false, "deleting", "being deleted"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got verdict
			got.Ready, got.Check, got.Reason = judge(object(t, tc.manifest))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("judge (-want +got):\n%s", diff)
			}
		})
	}
}
