package bench

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseClusterWrites(t *testing.T) {
	cases := map[string]struct {
		text    string
		want    map[string]float64
		wantErr string
	}{
		"writes by verb, resource and subresource, reads and dry runs left out": {
			text: `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="apps",resource="replicasets",scope="resource",subresource="",verb="POST",version="v1"} 12
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="replicasets",scope="resource",subresource="",verb="PUT",version="v1"} 30
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="replicasets",scope="resource",subresource="status",verb="PUT",version="v1"} 7
apiserver_request_total{code="409",component="apiserver",dry_run="",group="apps",resource="replicasets",scope="resource",subresource="",verb="PUT",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="APPLY",version="v1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 4.5e+01
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="DELETE",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="All",group="",resource="pods",scope="resource",subresource="",verb="DELETE",version="v1"} 9
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 100
apiserver_request_total{code="0",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="WATCH",version="v1"} 8
apiserver_request_total{code="201",component="",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 1
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 2
apiserver_request_duration_seconds_count{verb="POST",resource="pods"} 3
`,
			want: map[string]float64{
				"create replicasets": 12, "update replicasets": 30, "update replicasets/status": 7,
				"update replicasets (409)": 2, "apply deployments": 5, "patch pods/status": 45, "delete pods": 3,
				"create pods": 3,
			},
		},
		"escaped label values and a timestamp": {
			text: `apiserver_request_total{code="201",dry_run="",resource="events",note="a \"quoted\" \\ value\n",subresource="",verb="POST"} 4 1700000000000` + "\n",
			want: map[string]float64{"create events": 4},
		},
		"no samples": {text: "# nothing here\n", want: map[string]float64{}},
		"labels not closed": {
			text:    `apiserver_request_total{code="201",verb="POST" 4` + "\n",
			wantErr: "no end of labels",
		},
		"value not a number": {
			text:    `apiserver_request_total{code="201",verb="POST"} many` + "\n",
			wantErr: "invalid syntax",
		},
		"label value not terminated": {
			text:    `apiserver_request_total{code="201} 4` + "\n",
			wantErr: "unterminated value",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseClusterWrites([]byte(tc.text))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseClusterWrites() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseClusterWrites(): %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parseClusterWrites() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWritesSince(t *testing.T) {
	before := map[string]float64{"update leases": 100, "create pods": 10, "delete pods": 4}
	after := map[string]float64{"update leases": 112, "create pods": 10, "delete pods": 5, "create events": 7}
	want := map[string]int{"update leases": 12, "delete pods": 1, "create events": 7}
	if diff := cmp.Diff(want, countsSince(before, after)); diff != "" {
		t.Errorf("countsSince() (-want +got):\n%s", diff)
	}
}

func TestRowsClusterWrites(t *testing.T) {
	r := sampleReport()
	r.Results[0].Update.ClusterWrites = map[string]int{"update replicasets": 20, "update leases": 0, "create events": 2}
	r.Results[1].Update.ClusterWrites = map[string]int{"update replicasets": 10, "update leases": 0, "create events": 0}
	got := map[string][2]float64{}
	for _, row := range r.Rows() {
		if strings.HasPrefix(row.Metric, "update: cluster") {
			got[row.Metric] = [2]float64{row.Values["convergo"], row.Values["baseline"]}
		}
		if strings.HasPrefix(row.Metric, "converge: cluster") {
			t.Errorf("row %q: no implementation has cluster writes in converge", row.Metric)
		}
	}
	want := map[string][2]float64{
		"update: cluster writes":             {2.2, 1},
		"update: cluster update replicasets": {2, 1},
		"update: cluster create events":      {0.2, 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cluster write rows (-want +got):\n%s", diff)
	}
}

func TestMedianClusterWrites(t *testing.T) {
	cases := map[string]struct {
		phases []Phase
		want   map[string]int
	}{
		"medians per kind": {
			phases: []Phase{
				{ClusterWrites: map[string]int{"update replicasets": 10, "create events": 3}},
				{ClusterWrites: map[string]int{"update replicasets": 30}},
				{ClusterWrites: map[string]int{"update replicasets": 20, "create events": 5}},
			},
			want: map[string]int{"update replicasets": 20, "create events": 3},
		},
		"not taken in any round": {phases: []Phase{{}, {}}, want: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, medianPhase(tc.phases).ClusterWrites); diff != "" {
				t.Errorf("medianPhase().ClusterWrites (-want +got):\n%s", diff)
			}
		})
	}
}
