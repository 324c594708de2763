//go:build integration

package reconcile_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/testing/harness"
)

// applyAnswers records, for each server-side apply, the field validation it asked for and the media
// type of the API server's answer ("<fieldValidation> <media type>").
type applyAnswers struct {
	next http.RoundTripper
	mu   sync.Mutex
	got  []string
}

func (a *applyAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(req)
	if err == nil && req.Method == http.MethodPatch && req.Header.Get("Content-Type") == string(types.ApplyPatchType) {
		a.mu.Lock()
		a.got = append(a.got, req.URL.Query().Get("fieldValidation")+" "+resp.Header.Get("Content-Type"))
		a.mu.Unlock()
	}
	return resp, err
}

// take returns the media types recorded since the last call.
func (a *applyAnswers) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	got := a.got
	a.got = nil
	return got
}

// The Applier's writes of built-in kinds are answered in protobuf, decoded into the child's own type;
// an unstructured child is answered in JSON. Either way the answer is the live object, with the
// apiVersion and kind of the child. The applies ask for no field validation (Ignore), which loses
// nothing: a field the schema does not declare is still refused, with the field named.
func TestIntegrationApplyAnswers(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	rec := &applyAnswers{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	mgr := env.StartManager(t, nil, harness.WithManagerConfig(cfg))
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}
	if err := env.Client.Create(t.Context(), owner); err != nil {
		t.Fatal(err)
	}
	a := reconcile.NewApplier(mgr.GetClient(), mgr.GetScheme(), reconcile.WithAPIReader(mgr.GetAPIReader()))

	page := &unstructured.Unstructured{}
	page.SetAPIVersion("v1")
	page.SetKind("ConfigMap")
	page.SetName("page")
	page.Object["data"] = map[string]any{"page.html": "<p>hello</p>"}

	type answer struct {
		Op         reconcile.Operation
		MediaTypes []string
		Type       string
		APIVersion string
		Kind       string
		Data       string
	}
	steps := []struct {
		name    string
		desired client.Object
		want    answer
	}{
		{
			name:    "typed child created",
			desired: deployment("web"),
			want:    answer{Op: reconcile.OperationCreated, MediaTypes: []string{"Ignore application/vnd.kubernetes.protobuf"}, Type: "*v1.Deployment", APIVersion: "apps/v1", Kind: "Deployment", Data: "1"},
		},
		{
			name:    "typed child changed",
			desired: deployment("web", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](3) }),
			want:    answer{Op: reconcile.OperationUpdated, MediaTypes: []string{"Ignore application/vnd.kubernetes.protobuf"}, Type: "*v1.Deployment", APIVersion: "apps/v1", Kind: "Deployment", Data: "3"},
		},
		{
			name:    "unstructured child created",
			desired: page,
			want:    answer{Op: reconcile.OperationCreated, MediaTypes: []string{"Ignore application/json"}, Type: "*unstructured.Unstructured", APIVersion: "v1", Kind: "ConfigMap", Data: "<p>hello</p>"},
		},
	}
	for _, step := range steps {
		live, op, err := a.Apply(t.Context(), owner, step.desired)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		got := answer{Op: op, MediaTypes: rec.take(), Type: fmt.Sprintf("%T", live), APIVersion: live.GetObjectKind().GroupVersionKind().GroupVersion().String(), Kind: live.GetObjectKind().GroupVersionKind().Kind}
		switch l := live.(type) {
		case *appsv1.Deployment:
			got.Data = fmt.Sprint(ptr.Deref(l.Spec.Replicas, 0))
		case *unstructured.Unstructured:
			got.Data, _, _ = unstructured.NestedString(l.Object, "data", "page.html")
		}
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Errorf("%s: answer (-want +got):\n%s", step.name, diff)
		}
		if live.GetUID() == "" || live.GetResourceVersion() == "" {
			t.Errorf("%s: answer without UID or resourceVersion: %q, %q", step.name, live.GetUID(), live.GetResourceVersion())
		}
	}

	typo := page.DeepCopy()
	typo.SetName("typo")
	typo.Object["dataa"] = map[string]any{"page.html": "<p>hello</p>"}
	_, _, err := a.Apply(t.Context(), owner, typo)
	if err == nil || !strings.Contains(err.Error(), ".dataa: field not declared in schema") {
		t.Errorf("apply of a ConfigMap with an unknown field: %v, want the API server's refusal naming .dataa", err)
	}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "typo"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused ConfigMap: get: %v, want not found", err)
	}
}
