package reconcile_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/convergo-dev/convergo/internal/jsonstrip"
	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/reconcile"
)

// BenchmarkDecodeWatchEvents measures what client-go's watch decoder spends on 1000 watch events of
// a custom resource with three managedFields entries (a create, a finalizer added by the API server,
// status writes), as sent, and with them stripped first (what NewCache does for LeanCache's kinds), and
// what NewCache's own decoder of such a stream spends (stripping them too):
//
//	go test -run '^$' -bench DecodeWatchEvents -benchmem ./reconcile/
func BenchmarkDecodeWatchEvents(b *testing.B) {
	s := runtime.NewScheme()
	if err := testapi.AddToScheme(s); err != nil {
		b.Fatal(err)
	}
	metav1.AddToGroupVersion(s, metav1.SchemeGroupVersion)
	events := watchEvents(b, 1000)
	for _, tc := range []struct {
		name        string
		strip, lean bool
	}{
		{name: "client-go"},
		{name: "client-go,stripped", strip: true},
		{name: "NewCache,stripped", strip: true, lean: true},
	} {
		strip := tc.strip
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(events)))
			for b.Loop() {
				var body io.ReadCloser = io.NopCloser(bytes.NewReader(events))
				var dec watch.Decoder
				switch {
				case tc.lean:
					dec = reconcile.NewEventDecoder(body, &testapi.Widget{}, s, true)
				case strip:
					body = jsonstrip.NewReader(body, jsonstrip.Events)
					fallthrough
				default:
					dec = clientGoDecoder(b, s, body)
				}
				n := 0
				for {
					_, obj, err := dec.Decode()
					if err != nil {
						break
					}
					if strip != (len(obj.(*testapi.Widget).ManagedFields) == 0) {
						b.Fatalf("managedFields decoded: %d", len(obj.(*testapi.Widget).ManagedFields))
					}
					n++
				}
				if n != 1000 {
					b.Fatalf("decoded %d events, want 1000", n)
				}
			}
		})
	}
}

// watchEvents returns n ADDED events of Widgets as the API server writes them.
func watchEvents(b *testing.B, n int) []byte {
	b.Helper()
	now := metav1.Now()
	entry := func(manager, sub, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: testapi.GroupVersion.String(),
			Time: &now, FieldsType: "FieldsV1", Subresource: sub, FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	var buf bytes.Buffer
	for i := range n {
		w := &testapi.Widget{
			TypeMeta: metav1.TypeMeta{APIVersion: testapi.GroupVersion.String(), Kind: "Widget"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("widget-%04d", i), Namespace: "bench", UID: "0b6d2f34-5b8e-4c1e-9d1a-7e2f1c3b4a5d",
				ResourceVersion: "123456", Generation: 2, CreationTimestamp: now, Finalizers: []string{"test.convergo.dev/finalizer"},
				ManagedFields: []metav1.ManagedFieldsEntry{
					entry("bench", "", `{"f:spec":{".":{},"f:data":{".":{},"f:greeting":{},"f:name":{},"f:port":{}}}}`),
					entry("kube-apiserver", "", `{"f:metadata":{"f:finalizers":{".":{},"v:\"test.convergo.dev/finalizer\"":{}}}}`),
					entry("widgets", "status", `{"f:status":{".":{},"f:conditions":{".":{},"k:{\"type\":\"Ready\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:observedGeneration":{}}}`),
				}},
			Spec: testapi.WidgetSpec{Data: map[string]string{"greeting": "hello", "name": "Ada", "port": "8080"}},
		}
		w.Status.ObservedGeneration = 2
		w.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, ObservedGeneration: 2, LastTransitionTime: now, Reason: "Reconciled", Message: "all 3 children ready"}}
		raw, err := json.Marshal(w)
		if err != nil {
			b.Fatal(err)
		}
		ev, err := json.Marshal(metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: raw}})
		if err != nil {
			b.Fatal(err)
		}
		buf.Write(append(ev, '\n'))
	}
	return buf.Bytes()
}
