package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSelectImplementations(t *testing.T) {
	cases := map[string]struct {
		list    string
		want    []string
		wantErr bool
	}{
		"default":           {list: "convergo,expert,baseline", want: []string{"convergo", "expert", "baseline"}},
		"reversed":          {list: "baseline,convergo", want: []string{"baseline", "convergo"}},
		"spaces, duplicate": {list: " convergo , convergo,", want: []string{"convergo"}},
		"unknown":           {list: "convergo,kopf", wantErr: true},
		"empty":             {list: ",", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			impls, err := selectImplementations(tc.list)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error: %v", err, tc.wantErr)
			}
			var got []string
			for _, impl := range impls {
				if impl.Setup == nil {
					t.Errorf("%s has no Setup", impl.Name)
				}
				got = append(got, impl.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("implementations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	cases := map[string]struct {
		args    []string
		want    flags
		wantErr bool
	}{
		"out and size": {
			args: []string{"-n", "2000", "-out", "bench/results", "-rounds", "1"},
			want: flags{n: 2000, out: "bench/results", rounds: 1, restarts: 3},
		},
		"named result": {
			args: []string{"-out", "bench/results", "-name", "2026-11-24-n200-events"},
			want: flags{n: 50, out: "bench/results", rounds: 4, restarts: 3, name: "2026-11-24-n200-events"},
		},
		"profiles per phase": {
			args: []string{"-cpuprofiles", "/tmp/prof"},
			want: flags{n: 50, rounds: 4, restarts: 3, cpuprofs: "/tmp/prof"},
		},
		"without rollout": {
			args: []string{"-without-rollout", "-n", "200"},
			want: flags{n: 200, rounds: 4, restarts: 3, noRoll: true},
		},
		"floor": {
			args: []string{"-floor"},
			want: flags{n: 50, rounds: 4, restarts: 3, floor: true},
		},
		"restarts": {
			args: []string{"-restarts", "5"},
			want: flags{n: 50, rounds: 4, restarts: 5},
		},
		"two CPU profilers": {args: []string{"-cpuprofile", "a.cpu", "-cpuprofiles", "/tmp/prof"}, wantErr: true},
		"stray argument":    {args: []string{"extra"}, wantErr: true},
		"bad number":        {args: []string{"-n", "many"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, err := parseFlags(tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error: %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			got := flags{n: f.n, out: f.out, rounds: f.rounds, restarts: f.restarts, name: f.name, cpuprofs: f.cpuprofs, noRoll: f.noRoll, floor: f.floor}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(flags{})); diff != "" {
				t.Errorf("flags (-want +got):\n%s", diff)
			}
		})
	}
}
