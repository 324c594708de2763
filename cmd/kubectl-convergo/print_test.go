package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPrintTable(t *testing.T) {
	welcome := Owner{APIVersion: "web.convergo.dev/v1alpha1", Kind: "Welcome", Namespace: "demo", Name: "alice", UID: "u1"}
	tests := map[string]struct {
		tree Tree
		want string
	}{
		"graph children and one without a node": {
			tree: Tree{
				Owner: func() Owner {
					o := welcome
					o.Ready = &Condition{Status: "False", Reason: "WaitingForDependencies", Message: "deployment: 1/2 replicas available"}
					return o
				}(),
				Children: []Child{
					{Node: "page", Kind: "ConfigMap", Namespace: "demo", Name: "alice", Ready: true, Check: "exists",
						Written: &Write{Manager: "welcome", Time: time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)}, WrittenFor: "created"},
					{Node: "deployment", DependsOn: []string{"page", "secret"}, Kind: "Deployment", Namespace: "demo", Name: "alice",
						Check: "DeploymentAvailable", Reason: "1/2 replicas available",
						Written: &Write{Manager: "welcome", Time: time.Date(2026, 12, 6, 10, 5, 0, 0, time.UTC)}},
					{Kind: "ClusterRole", Name: "alice-reader", Ready: true, Check: "exists"},
				},
			},
			want: `Welcome demo/alice: Ready=False (WaitingForDependencies) deployment: 1/2 replicas available
Last written 2026-12-06T10:05:00Z
NODE        DEPENDS ON   KIND         NAME          READY  WRITTEN               FOR      CHECK                REASON
page                     ConfigMap    demo/alice    True   2026-12-06T10:00:00Z  created  exists
deployment  page,secret  Deployment   demo/alice    False  2026-12-06T10:05:00Z  -        DeploymentAvailable  1/2 replicas available
<none>                   ClusterRole  alice-reader  True   -                     -        exists
<none>: the child records no graph node (applied without a Graph, or not reconciled since an upgrade); listed last.
`,
		},
		"the last write with its trigger": {
			tree: Tree{Owner: welcome,
				Children: []Child{
					{Node: "page", Kind: "ConfigMap", Namespace: "demo", Name: "alice", Ready: true, Check: "exists",
						Written: &Write{Manager: "welcome", Time: time.Date(2026, 12, 6, 10, 7, 0, 0, time.UTC)}, WrittenFor: "changed"},
					{Node: "deployment", DependsOn: []string{"page"}, Kind: "Deployment", Namespace: "demo", Name: "alice", Ready: true,
						Check: "DeploymentAvailable", Written: &Write{Manager: "welcome", Time: time.Date(2026, 12, 6, 10, 5, 0, 0, time.UTC)}},
				},
			},
			want: `Welcome demo/alice: no Ready condition
Last written 2026-12-06T10:07:00Z, by a reconcile for: changed
NODE        DEPENDS ON  KIND        NAME        READY  WRITTEN               FOR      CHECK                REASON
page                    ConfigMap   demo/alice  True   2026-12-06T10:07:00Z  changed  exists
deployment  page        Deployment  demo/alice  True   2026-12-06T10:05:00Z  -        DeploymentAvailable
`,
		},
		"external objects after the children": {
			tree: Tree{Owner: welcome,
				Children: []Child{{Node: "credentials", DependsOn: []string{"database"}, Kind: "Secret", Namespace: "demo", Name: "orders-credentials", Ready: true, Check: "exists"}},
				External: []External{{Node: "role", Kind: "postgres.role", ID: "demo_orders"}, {Node: "database", Kind: "postgres.database", ID: "demo_orders", Keep: true}},
			},
			want: `Welcome demo/alice: no Ready condition
NODE         DEPENDS ON  KIND    NAME                     READY  WRITTEN  FOR  CHECK   REASON
credentials  database    Secret  demo/orders-credentials  True   -        -    exists
EXTERNAL NODE  KIND               ID           ON DELETE
role           postgres.role      demo_orders  delete
database       postgres.database  demo_orders  keep
`,
		},
		"children in member clusters": {
			tree: Tree{Owner: welcome,
				Children: []Child{
					{Node: "page", Kind: "ConfigMap", Namespace: "demo", Name: "alice", Ready: true, Check: "exists"},
					{Node: "deployment-eu-1", DependsOn: []string{"page"}, Cluster: "eu-1", Kind: "Deployment", Namespace: "demo", Name: "alice",
						Ready: true, Check: "DeploymentAvailable"},
					{Node: "deployment-us-east", DependsOn: []string{"page"}, Cluster: "us-east", Kind: "Deployment", Namespace: "demo", Name: "alice",
						Check: "DeploymentAvailable", Reason: "0/2 replicas available"},
					{Cluster: "eu-1", Kind: "ClusterRole", Name: "alice-reader", Ready: true, Check: "exists"},
				},
			},
			want: `Welcome demo/alice: no Ready condition
NODE                DEPENDS ON  CLUSTER  KIND         NAME          READY  WRITTEN  FOR  CHECK                REASON
page                            -        ConfigMap    demo/alice    True   -        -    exists
deployment-eu-1     page        eu-1     Deployment   demo/alice    True   -        -    DeploymentAvailable
deployment-us-east  page        us-east  Deployment   demo/alice    False  -        -    DeploymentAvailable  0/2 replicas available
<none>                          eu-1     ClusterRole  alice-reader  True   -        -    exists
<none>: the child records no graph node (applied without a Graph, or not reconciled since an upgrade); listed last.
`,
		},
		"no children, no Ready condition": {
			tree: Tree{Owner: welcome},
			want: `Welcome demo/alice: no Ready condition
No children found (label convergo.dev/owner-uid=u1).
`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := printTable(&b, &tc.tree); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("printTable (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrintJSON(t *testing.T) {
	tree := Tree{
		Owner: Owner{APIVersion: "web.convergo.dev/v1alpha1", Kind: "Welcome", Namespace: "demo", Name: "alice", UID: "u1",
			Ready: &Condition{Status: "True", Reason: "Reconciled"}},
		Children: []Child{
			{Node: "deployment", DependsOn: []string{"page"}, APIVersion: "apps/v1", Kind: "Deployment", Namespace: "demo", Name: "alice",
				Ready: true, Check: "DeploymentAvailable"},
		},
	}
	want := `{
  "owner": {
    "apiVersion": "web.convergo.dev/v1alpha1",
    "kind": "Welcome",
    "namespace": "demo",
    "name": "alice",
    "uid": "u1",
    "ready": {
      "status": "True",
      "reason": "Reconciled"
    }
  },
  "children": [
    {
      "node": "deployment",
      "dependsOn": [
        "page"
      ],
      "apiVersion": "apps/v1",
      "kind": "Deployment",
      "namespace": "demo",
      "name": "alice",
      "ready": true,
      "check": "DeploymentAvailable"
    }
  ]
}
`
	var b bytes.Buffer
	if err := printJSON(&b, &tree); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("printJSON (-want +got):\n%s", diff)
	}
}
