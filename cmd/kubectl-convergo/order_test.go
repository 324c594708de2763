package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestChildOf(t *testing.T) {
	tests := map[string]struct {
		manifest string
		want     Child
	}{
		"graph child": {
			manifest: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: alice, namespace: demo, generation: 1,
				annotations: {convergo.dev/node: deployment, convergo.dev/depends-on: "config, page"}}, spec: {replicas: 1},
				status: {observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1}}`,
			want: Child{Node: "deployment", DependsOn: []string{"config", "page"}, APIVersion: "apps/v1", Kind: "Deployment",
				Namespace: "demo", Name: "alice", Ready: true, Check: "DeploymentAvailable"},
		},
		"cluster-scoped child applied without a graph": {
			manifest: `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: reader}}`,
			want:     Child{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "reader", Ready: true, Check: "exists"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, childOf(object(t, tc.manifest))); diff != "" {
				t.Errorf("childOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInGraphOrder(t *testing.T) {
	child := func(node, kind, name string, deps ...string) Child {
		return Child{Node: node, DependsOn: deps, Kind: kind, Namespace: "ns", Name: name}
	}
	tests := map[string]struct {
		in   []Child
		want []string // node/kind/name, and @cluster for a member cluster's child
	}{
		"layers, by node name within a layer": {
			in: []Child{
				child("service", "Service", "web"),
				child("deployment", "Deployment", "web", "page"),
				child("page", "ConfigMap", "web"),
			},
			want: []string{"page/ConfigMap/web", "service/Service/web", "deployment/Deployment/web"},
		},
		"a node's layer follows its deepest dependency": {
			in: []Child{
				child("app", "Deployment", "app", "migrate", "config"),
				child("migrate", "Job", "migrate", "db"),
				child("db", "StatefulSet", "db"),
				child("config", "ConfigMap", "config"),
			},
			want: []string{"config/ConfigMap/config", "db/StatefulSet/db", "migrate/Job/migrate", "app/Deployment/app"},
		},
		"children without a node last, by kind and name": {
			in: []Child{
				child("", "Secret", "b"),
				child("", "ConfigMap", "z"),
				child("web", "Deployment", "web", "gone"),
				child("", "ConfigMap", "a"),
			},
			want: []string{"web/Deployment/web", "/ConfigMap/a", "/ConfigMap/z", "/Secret/b"},
		},
		"an old object and its replacement share their node's place": {
			in: []Child{
				child("page", "ConfigMap", "web-v2"),
				child("deployment", "Deployment", "web", "page"),
				child("page", "ConfigMap", "web-v1"),
			},
			want: []string{"page/ConfigMap/web-v1", "page/ConfigMap/web-v2", "deployment/Deployment/web"},
		},
		"a cycle from edited annotations still orders every child": {
			in: []Child{
				child("b", "ConfigMap", "b", "a"),
				child("a", "ConfigMap", "a", "b"),
				child("c", "ConfigMap", "c"),
			},
			want: []string{"b/ConfigMap/b", "c/ConfigMap/c", "a/ConfigMap/a"},
		},
		"across member clusters, by the same marks": {
			in: []Child{
				inCluster(child("", "ConfigMap", "a"), "eu-1"),
				inCluster(child("deployment-eu-1", "Deployment", "web", "config"), "eu-1"),
				child("", "ConfigMap", "z"),
				inCluster(child("config", "ConfigMap", "web"), "us-east"),
				child("page", "ConfigMap", "web"),
			},
			want: []string{"config/ConfigMap/web@us-east", "page/ConfigMap/web", "deployment-eu-1/Deployment/web@eu-1", "/ConfigMap/z", "/ConfigMap/a@eu-1"},
		},
		"none": {},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, c := range inGraphOrder(tc.in) {
				s := c.Node + "/" + c.Kind + "/" + c.Name
				if c.Cluster != "" {
					s += "@" + c.Cluster
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("inGraphOrder (-want +got):\n%s", diff)
			}
		})
	}
}

// inCluster returns c in the member cluster name.
func inCluster(c Child, name string) Child {
	c.Cluster = name
	return c
}

func TestOwnerOf(t *testing.T) {
	tests := map[string]struct {
		manifest string
		want     Owner
	}{
		"with a Ready condition": {
			manifest: `{apiVersion: web.convergo.dev/v1alpha1, kind: Welcome, metadata: {name: alice, namespace: demo, uid: u1},
				status: {conditions: [{type: Reconciling, status: "True", reason: Progressing},
					{type: Ready, status: "False", reason: Progressing, message: "deployment: 1/2 replicas available"}]}}`,
			want: Owner{APIVersion: "web.convergo.dev/v1alpha1", Kind: "Welcome", Namespace: "demo", Name: "alice", UID: "u1",
				Ready: &Condition{Status: "False", Reason: "Progressing", Message: "deployment: 1/2 replicas available"}},
		},
		"cluster-scoped, no status": {
			manifest: `{apiVersion: example.com/v1, kind: Tenant, metadata: {name: acme, uid: u2}}`,
			want:     Owner{APIVersion: "example.com/v1", Kind: "Tenant", Name: "acme", UID: "u2"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ownerOf(object(t, tc.manifest))); diff != "" {
				t.Errorf("ownerOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLastApply(t *testing.T) {
	at := func(h int) *metav1.Time {
		tm := metav1.NewTime(time.Date(2026, 12, 6, h, 0, 0, 0, time.UTC))
		return &tm
	}
	cases := map[string]struct {
		fields []metav1.ManagedFieldsEntry
		want   *Write
	}{
		"none": {},
		"the latest apply, not a later update": {
			fields: []metav1.ManagedFieldsEntry{
				{Manager: "welcome", Operation: metav1.ManagedFieldsOperationApply, Time: at(9)},
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(11)},
				{Manager: "welcome-v2", Operation: metav1.ManagedFieldsOperationApply, Time: at(10)},
			},
			want: &Write{Manager: "welcome-v2", Time: at(10).Time},
		},
		"an apply without a time": {fields: []metav1.ManagedFieldsEntry{{Manager: "welcome", Operation: metav1.ManagedFieldsOperationApply}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			obj.SetManagedFields(tc.fields)
			if diff := cmp.Diff(tc.want, lastApply(obj)); diff != "" {
				t.Errorf("lastApply (-want +got):\n%s", diff)
			}
		})
	}
}
