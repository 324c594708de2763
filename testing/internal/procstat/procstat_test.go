package procstat

import (
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFields(t *testing.T) {
	cases := map[string]struct {
		stat    string
		want    []string
		wantErr bool
	}{
		"plain":                      {stat: "1234 (etcd) S 1 1234", want: []string{"S", "1", "1234"}},
		"a command name with spaces": {stat: "77 (my (odd) name) R 5 77", want: []string{"R", "5", "77"}},
		"nothing after the name":     {stat: "1 (x)", want: []string{}},
		"no command name":            {stat: "garbage", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Fields(tc.stat)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadOwnParent reads the test binary's own line: its parent is the process that started it.
func TestReadOwnParent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	fields, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if len(fields) < 2 {
		t.Fatalf("fields %v: want at least the state and the parent", fields)
	}
	if diff := cmp.Diff(strconv.Itoa(os.Getppid()), fields[1]); diff != "" {
		t.Errorf("parent (-want +got):\n%s", diff)
	}
}
