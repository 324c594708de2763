package cluster

import (
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseStatCPU(t *testing.T) {
	cases := map[string]struct {
		stat    string
		want    time.Duration
		wantErr bool
	}{
		"plain": {
			stat: "1234 (kube-apiserver) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 100 0 0",
			want: 3 * time.Second,
		},
		"a command name with spaces and parentheses": {
			stat: "77 (my (odd) name) R 1 77 77 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 5 0 0",
			want: 100 * time.Millisecond,
		},
		"no command name": {stat: "garbage", wantErr: true},
		"too short":       {stat: "1 (x) S 1 2", wantErr: true},
		"not a number":    {stat: "1 (x) S 1 1 1 0 -1 0 0 0 0 0 u s 0 0", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseStatCPU(tc.stat)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseMachineStat(t *testing.T) {
	cases := map[string]struct {
		stat    string
		want    time.Duration
		wantErr bool
	}{
		// user 300, nice 10, system 50, idle 9000 and iowait 40 (not busy), irq 0, softirq 20, steal 20.
		"busy fields summed, idle and iowait left out": {
			stat: "cpu  300 10 50 9000 40 0 20 20 0 0\ncpu0 150 5 25 4500 20 0 10 10 0 0\nintr 1 2 3\n",
			want: 4 * time.Second,
		},
		"the cpu line after others": {stat: "intr 5\ncpu 100 0 0 7 7 0 0 0\n", want: time.Second},
		"only per-core lines":       {stat: "cpu0 1 2 3 4 5 6 7 8\n", wantErr: true},
		"too short":                 {stat: "cpu 1 2 3 4\n", wantErr: true},
		"not a number":              {stat: "cpu 1 x 3 4 5 6 7 8\n", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseMachineStat([]byte(tc.stat))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestCPUTimeGrows reads the test binary's own CPU time and the machine's around some work.
func TestCPUTimeGrows(t *testing.T) {
	readers := map[string]func() (time.Duration, error){
		"process": func() (time.Duration, error) { return processCPUTime(os.Getpid()) },
		"machine": MachineCPUTime,
	}
	for name, read := range readers {
		t.Run(name, func(t *testing.T) {
			before, err := read()
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(300 * time.Millisecond)
			x := 0
			for time.Now().Before(deadline) {
				x++
			}
			after, err := read()
			if err != nil {
				t.Fatal(err)
			}
			if after <= before {
				t.Errorf("cpu time %s after busy work, %s before: want it to grow (%d iterations)", after, before, x)
			}
		})
	}
}
