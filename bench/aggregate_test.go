package bench

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMedian(t *testing.T) {
	round := func(seconds float64, requests int, writes map[string]int, heap int64) Result {
		return Result{
			Implementation: "convergo",
			Converge:       Phase{Seconds: seconds, Requests: requests, ByVerb: map[string]int{"patch": requests}, Writes: writes, Reconciles: requests / 3},
			Delete:         Phase{DrainedSeconds: seconds + 1},
			Memory:         Memory{HeapInuseBytes: heap, HeapAllocBytes: heap / 2},
		}
	}
	cases := map[string]struct {
		rounds []Result
		want   Result
	}{
		"none": {want: Result{}},
		"one": {
			rounds: []Result{round(2, 9, map[string]int{"patch welcomes": 1}, 100)},
			want: Result{Implementation: "convergo",
				Converge: Phase{Seconds: 2, Requests: 9, ByVerb: map[string]int{"patch": 9}, Writes: map[string]int{"patch welcomes": 1}, Reconciles: 3},
				Restart:  Phase{ByVerb: map[string]int{}, Writes: map[string]int{}}, Update: Phase{ByVerb: map[string]int{}, Writes: map[string]int{}},
				Delete: Phase{DrainedSeconds: 3, ByVerb: map[string]int{}, Writes: map[string]int{}}, Memory: Memory{HeapInuseBytes: 100, HeapAllocBytes: 50}},
		},
		"odd: the middle value of each figure, an outlier ignored": {
			rounds: []Result{
				round(9, 9, map[string]int{"patch welcomes": 1, "create events": 3}, 300),
				round(2, 12, map[string]int{"patch welcomes": 1}, 100),
				round(3, 9, map[string]int{"patch welcomes": 2, "create events": 3}, 200),
			},
			want: Result{Implementation: "convergo",
				Converge: Phase{Seconds: 3, Requests: 9, ByVerb: map[string]int{"patch": 9}, Writes: map[string]int{"patch welcomes": 1, "create events": 3}, Reconciles: 3},
				Restart:  Phase{ByVerb: map[string]int{}, Writes: map[string]int{}}, Update: Phase{ByVerb: map[string]int{}, Writes: map[string]int{}},
				Delete: Phase{DrainedSeconds: 4, ByVerb: map[string]int{}, Writes: map[string]int{}}, Memory: Memory{HeapInuseBytes: 200, HeapAllocBytes: 100}},
		},
		"even: the mean of the two middle values, counts rounded": {
			rounds: []Result{
				round(1, 6, map[string]int{"patch welcomes": 1}, 100),
				round(4, 12, map[string]int{"patch welcomes": 1, "create events": 1}, 300),
			},
			want: Result{Implementation: "convergo",
				Converge: Phase{Seconds: 2.5, Requests: 9, ByVerb: map[string]int{"patch": 9}, Writes: map[string]int{"patch welcomes": 1, "create events": 1}, Reconciles: 3},
				Restart:  Phase{ByVerb: map[string]int{}, Writes: map[string]int{}}, Update: Phase{ByVerb: map[string]int{}, Writes: map[string]int{}},
				Delete: Phase{DrainedSeconds: 3.5, ByVerb: map[string]int{}, Writes: map[string]int{}}, Memory: Memory{HeapInuseBytes: 200, HeapAllocBytes: 100}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Median(tc.rounds)); diff != "" {
				t.Errorf("Median (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMedianIdleCPU(t *testing.T) {
	round := func(idle, above float64) Result {
		return Result{
			Implementation:   "expert",
			IdleCPUPerSecond: map[string]float64{"kube-apiserver": idle},
			Converge:         Phase{ServerCPUAboveIdleSeconds: map[string]float64{"kube-apiserver": above}},
		}
	}
	got := Median([]Result{round(0.1, 5), round(0.3, 2), round(0.2, 9)})
	if diff := cmp.Diff(map[string]float64{"kube-apiserver": 0.2}, got.IdleCPUPerSecond); diff != "" {
		t.Errorf("idle CPU (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"kube-apiserver": 5}, got.Converge.ServerCPUAboveIdleSeconds); diff != "" {
		t.Errorf("converge CPU above idle (-want +got):\n%s", diff)
	}
}

func TestMedianRestartFloor(t *testing.T) {
	floor := func(seconds float64) *Phase {
		return &Phase{Seconds: seconds, ByVerb: map[string]int{}, Writes: map[string]int{}}
	}
	cases := map[string]struct {
		floors []*Phase
		want   *Phase
	}{
		"no round measured one": {floors: []*Phase{nil, nil}},
		"the median of the rounds that did": {
			floors: []*Phase{floor(0.6), nil, floor(0.4), floor(0.9)},
			want:   floor(0.6),
		},
		"two rounds": {floors: []*Phase{floor(0.4), floor(0.5)}, want: floor(0.45)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rounds := make([]Result, len(tc.floors))
			for i, f := range tc.floors {
				rounds[i] = Result{Implementation: "convergo", RestartFloor: f}
			}
			if diff := cmp.Diff(tc.want, Median(rounds).RestartFloor); diff != "" {
				t.Errorf("median restart floor (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMedianRestartSeconds(t *testing.T) {
	cases := map[string]struct {
		rounds       [][]float64
		floors       [][]float64
		want, wantFl []float64
	}{
		"none measured": {rounds: [][]float64{nil, nil}},
		"every round's, in order": {
			rounds: [][]float64{{0.3, 0.1}, {0.2}},
			floors: [][]float64{{0.05}, nil},
			want:   []float64{0.3, 0.1, 0.2},
			wantFl: []float64{0.05},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rounds := make([]Result, len(tc.rounds))
			for i := range tc.rounds {
				rounds[i] = Result{Implementation: "convergo", RestartSeconds: tc.rounds[i]}
				if i < len(tc.floors) {
					rounds[i].RestartFloorSeconds = tc.floors[i]
				}
			}
			got := Median(rounds)
			if diff := cmp.Diff(tc.want, got.RestartSeconds); diff != "" {
				t.Errorf("restart seconds (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFl, got.RestartFloorSeconds); diff != "" {
				t.Errorf("restart floor seconds (-want +got):\n%s", diff)
			}
		})
	}
}
