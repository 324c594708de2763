package intent

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/randfill"

	"github.com/convergo-dev/convergo/internal/kobj"
)

// FuzzIntent fills typed objects randomly and checks the intent extraction's properties:
//   - the intent is valid unstructured content and its hash is deterministic;
//   - the intent is a subset of the object's full unstructured form (nothing invented);
//   - extraction is idempotent: the intent, converted back to the type, yields an intent of the
//     same meaning;
//   - it never holds server state (status, uid, resourceVersion, creationTimestamp...).
func FuzzIntent(f *testing.F) {
	for seed := range int64(8) {
		f.Add(seed, uint8(seed))
	}
	s := testScheme(f)
	f.Fuzz(func(t *testing.T, seed int64, kind uint8) {
		obj := randomObject(seed, kind)
		obj.SetName("n")

		intent, err := Of(obj, s)
		if err != nil {
			t.Fatal(err)
		}
		_ = runtime.DeepCopyJSON(intent) // panics on non-JSON values
		h1, err := Hash(intent)
		if err != nil {
			t.Fatal(err)
		}
		h2, _ := Hash(runtime.DeepCopyJSON(intent))
		if h1 != h2 {
			t.Fatalf("hash not deterministic: %s != %s", h1, h2)
		}
		if _, ok := intent["status"]; ok {
			t.Fatal("intent holds status")
		}
		md := intent["metadata"].(map[string]any)
		for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "deletionTimestamp"} {
			if _, ok := md[k]; ok {
				t.Fatalf("intent metadata holds %s", k)
			}
		}

		if _, isSecret := obj.(*corev1.Secret); !isSecret { // stringData is folded into data
			full, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				t.Skip() // randomly filled values the converter cannot handle
			}
			// As the API server holds it: quantities parsed and serialised again ("5000" as "5k").
			held := kobj.New(obj)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(full, held); err != nil {
				t.Skip()
			}
			if full, err = runtime.DefaultUnstructuredConverter.ToUnstructured(held); err != nil {
				t.Skip()
			}
			full["apiVersion"], full["kind"] = intent["apiVersion"], intent["kind"]
			if ok, path := isSubset(intent, full, false); !ok {
				t.Fatalf("intent is not a subset of the object at %s", path)
			}
		}

		back := kobj.New(obj)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(runtime.DeepCopyJSON(intent), back); err != nil {
			t.Fatalf("intent does not convert back to %T: %v", obj, err)
		}
		again, err := Of(back, s)
		if err != nil {
			t.Fatal(err)
		}
		// The same both ways: quantities are already in the form parsing them again gives.
		okA, pathA := isSubset(intent, again, false)
		okB, pathB := isSubset(again, intent, false)
		if !okA || !okB {
			t.Fatalf("extraction is not idempotent (differences at %q / %q):\n%s", pathA, pathB, cmp.Diff(intent, again))
		}

	})
}

// fuzzKinds are the kinds the fuzz tests fill.
var fuzzKinds = []func() client.Object{
	func() client.Object { return &appsv1.Deployment{} },
	func() client.Object { return &corev1.Service{} },
	func() client.Object { return &corev1.Pod{} },
	func() client.Object { return &corev1.ConfigMap{} },
	func() client.Object { return &corev1.Secret{} },
	func() client.Object { return &batchv1.Job{} },
	func() client.Object { return &appsv1.StatefulSet{} },
}

// randomObject returns an object of fuzzKinds[kind] filled randomly from seed, with quantities and
// times the API server could hold and no raw extensions or managed fields.
func randomObject(seed int64, kind uint8) client.Object {
	obj := fuzzKinds[int(kind)%len(fuzzKinds)]()
	randfill.NewWithSeed(seed).NilChance(0.4).NumElements(0, 2).MaxDepth(12).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			if c.Bool() {
				*q = *resource.NewMilliQuantity(c.Int63n(1_000_000), resource.DecimalSI)
			} else {
				*q = *resource.NewQuantity(c.Int63n(1<<40), resource.BinarySI)
			}
		},
		func(tm *metav1.Time, c randfill.Continue) {
			if c.Bool() {
				*tm = metav1.Unix(c.Int63n(1<<31), 0)
			} else {
				*tm = metav1.Time{}
			}
		},
		func(tm *metav1.MicroTime, c randfill.Continue) { *tm = metav1.MicroTime{} },
		func(r *runtime.RawExtension, c randfill.Continue) { *r = runtime.RawExtension{} },
		func(f *metav1.FieldsV1, c randfill.Continue) { *f = metav1.FieldsV1{} },
	).Fill(obj)
	return obj
}
