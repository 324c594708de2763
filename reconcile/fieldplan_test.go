package reconcile

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// chain is a record that holds itself: a tree, not a flat record.
type chain struct {
	Name string
	Next *chain
}

// pair holds a record that holds itself.
type pair struct {
	Port  int32
	Chain *chain
}

func TestFlat(t *testing.T) {
	tests := []struct {
		name string
		t    reflect.Type
		want bool
	}{
		{name: "a Service's port", t: reflect.TypeFor[corev1.ServicePort](), want: true},
		{name: "a container", t: reflect.TypeFor[corev1.Container](), want: false},
		{name: "a string", t: reflect.TypeFor[string](), want: false},
		{name: "a record that holds itself", t: reflect.TypeFor[chain](), want: false},
		{name: "a record holding one that holds itself", t: reflect.TypeFor[pair](), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 { // worked out, then remembered
				if diff := cmp.Diff(tt.want, flat(tt.t)); diff != "" {
					t.Errorf("flat(%s) (-want +got):\n%s", tt.t, diff)
				}
			}
		})
	}
}
