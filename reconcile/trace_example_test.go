package reconcile_test

import (
	"context"
	"fmt"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/graph"
)

func ExampleWithTracerProvider() {
	// The program picks the exporter (OTLP to Jaeger or a collector, in an operator); here the spans
	// are kept in memory. Setting it globally (otel.SetTracerProvider) does the same for every
	// Reconciler without the option.
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))

	// The API requests of the manager's client nest under the reconcile's span when its rest.Config's
	// transport is wrapped, client-go's own extension point: cfg := ctrl.GetConfigOrDie(), then
	cfg := &rest.Config{Host: "https://127.0.0.1:6443"}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return otelhttp.NewTransport(rt, otelhttp.WithTracerProvider(tp))
	})

	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = testapi.AddToScheme(scheme)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(testapi.GroupVersion.WithKind("Widget"), meta.RESTScopeNamespace)
	w := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "1234", Generation: 1}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(w).WithStatusSubresource(w).Build()

	r := reconcile.NewReconciler(exampleManager{client: c, recorder: events.NewFakeRecorder(10)}, reconcile.Hooks[*testapi.Widget]{
		Children: func(ctx context.Context, w *testapi.Widget) (*graph.Graph, error) {
			g := graph.New()
			g.Add("config", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name + "-config"}})
			return g, nil
		},
	}, reconcile.WithName("widget"), reconcile.WithOwns(&corev1.ConfigMap{}),
		reconcile.WithTracerProvider(tp))
	_, _ = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)})

	for _, s := range spans.Ended() {
		fmt.Println(s.Name())
	}
	fmt.Println("transport wrapped:", cfg.WrapTransport != nil)
	// Output:
	// finalizer
	// apply config
	// prune
	// status patch
	// widget
	// transport wrapped: true
}
