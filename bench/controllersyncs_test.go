package bench

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseQueueWork(t *testing.T) {
	cases := map[string]struct {
		text        string
		wantSyncs   map[string]float64
		wantSeconds map[string]float64
		wantErr     string
	}{
		"counts and sums by queue, buckets and other metrics left out": {
			text: `# HELP workqueue_work_duration_seconds [ALPHA] How long in seconds processing an item from workqueue takes.
# TYPE workqueue_work_duration_seconds histogram
workqueue_work_duration_seconds_bucket{name="deployment",le="1e-08"} 0
workqueue_work_duration_seconds_bucket{name="deployment",le="+Inf"} 3002
workqueue_work_duration_seconds_sum{name="deployment"} 12.5
workqueue_work_duration_seconds_count{name="deployment"} 3002
workqueue_work_duration_seconds_sum{name="endpoint_slice"} 40.25 1764300000000
workqueue_work_duration_seconds_count{name="endpoint_slice"} 2.5e+03 1764300000000
workqueue_adds_total{name="deployment"} 3100
workqueue_work_duration_seconds_count_extra{name="deployment"} 9
`,
			wantSyncs:   map[string]float64{"deployment": 3002, "endpoint_slice": 2500},
			wantSeconds: map[string]float64{"deployment": 12.5, "endpoint_slice": 40.25},
		},
		"no queue at all": {
			text:        "process_cpu_seconds_total 12\n",
			wantSyncs:   map[string]float64{},
			wantSeconds: map[string]float64{},
		},
		"labels not closed": {
			text:    `workqueue_work_duration_seconds_count{name="deployment" 3` + "\n",
			wantErr: "no end of labels",
		},
		"a value that is no number": {
			text:    `workqueue_work_duration_seconds_sum{name="deployment"} many` + "\n",
			wantErr: `parse workqueue_work_duration_seconds sample`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseQueueWork([]byte(tc.text))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseQueueWork() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([2]map[string]float64{tc.wantSyncs, tc.wantSeconds}, [2]map[string]float64{got.syncs, got.seconds}); diff != "" {
				t.Errorf("syncs, seconds (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQueueWorkSince(t *testing.T) {
	before := queueWork{
		syncs:   map[string]float64{"deployment": 100, "replicaset": 50, "endpoint": 7},
		seconds: map[string]float64{"deployment": 1, "replicaset": 0.5, "endpoint": 0.25},
	}
	after := queueWork{
		syncs:   map[string]float64{"deployment": 130, "replicaset": 50, "endpoint": 9, "endpoint_slice": 4},
		seconds: map[string]float64{"deployment": 1.75, "replicaset": 0.5, "endpoint": 0.5, "endpoint_slice": 2},
	}
	syncs, seconds := after.since(before)
	wantSyncs := map[string]int{"deployment": 30, "endpoint": 2, "endpoint_slice": 4}
	wantSeconds := map[string]float64{"deployment": 0.75, "endpoint": 0.25, "endpoint_slice": 2}
	if diff := cmp.Diff(wantSyncs, syncs); diff != "" {
		t.Errorf("syncs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantSeconds, seconds); diff != "" {
		t.Errorf("seconds (-want +got):\n%s", diff)
	}
}

// TestRowsControllerSyncs checks the rows of the controller-manager's syncs: a queue appears when some
// implementation synced it at least once in 20 per CR, with its syncs and their time, in the phases
// that have them and never in restart.
func TestRowsControllerSyncs(t *testing.T) {
	r := sampleReport()
	r.Results[0].Update.ControllerSyncs = map[string]int{"endpoint_slice": 30, "deployment": 20, "resource_quota": 0}
	r.Results[0].Update.ControllerSyncSeconds = map[string]float64{"endpoint_slice": 0.5, "deployment": 0.1}
	r.Results[1].Update.ControllerSyncs = map[string]int{"endpoint_slice": 20}
	r.Results[1].Update.ControllerSyncSeconds = map[string]float64{"endpoint_slice": 0.25}
	r.Results[0].Restart.ControllerSyncs = map[string]int{"endpoint_slice": 10}
	got := map[string][2]float64{}
	for _, row := range r.Rows() {
		if !strings.Contains(row.Metric, "kube-controller-manager syncs") && !strings.Contains(row.Metric, "kube-controller-manager time in syncs") {
			continue
		}
		if !strings.HasPrefix(row.Metric, "update: ") {
			t.Errorf("row %q: only update has syncs to show", row.Metric)
			continue
		}
		got[row.Metric] = [2]float64{row.Values["convergo"], row.Values["baseline"]}
	}
	want := map[string][2]float64{
		"update: kube-controller-manager syncs deployment":             {2, 0},
		"update: kube-controller-manager syncs endpoint_slice":         {3, 2},
		"update: kube-controller-manager time in syncs deployment":     {10, 0},
		"update: kube-controller-manager time in syncs endpoint_slice": {50, 25},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("controller-manager rows (-want +got):\n%s", diff)
	}
}
