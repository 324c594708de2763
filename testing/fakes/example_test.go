package fakes_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/testing/fakes"
)

// Every second write is answered with a Conflict, to test retry logic.
func ExampleNewClient() {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "settings"}}
	c := fakes.NewClient(nil, fakes.WithObjects(cm), fakes.WithConflictEvery(2))
	for i := range 4 {
		var live corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &live); err != nil {
			panic(err)
		}
		live.Data = map[string]string{"attempt": fmt.Sprint(i)}
		err := c.Update(ctx, &live)
		fmt.Printf("update %d: conflict=%v\n", i, apierrors.IsConflict(err))
	}
	fmt.Println(c.Injected())
	// Output:
	// update 0: conflict=false
	// update 1: conflict=true
	// update 2: conflict=false
	// update 3: conflict=true
	// conflicts=2 errors=0 delayed=0
}

// InjectFaults answers writes with 409 Conflict before they reach the server; reads pass.
func ExampleInjectFaults() {
	var writes int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			writes++
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{}`)
	}))
	defer srv.Close()

	cfg := fakes.InjectFaults(&rest.Config{Host: srv.URL}, fakes.WithInjectRate(1))
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		panic(err)
	}
	get, err := hc.Get(srv.URL + "/api/v1/namespaces/demo/configmaps/settings")
	if err != nil {
		panic(err)
	}
	get.Body.Close()
	post, err := hc.Post(srv.URL+"/api/v1/namespaces/demo/configmaps", "application/json", strings.NewReader(`{}`))
	if err != nil {
		panic(err)
	}
	post.Body.Close()
	fmt.Println("get:", get.StatusCode)
	fmt.Println("create:", post.StatusCode)
	fmt.Println("writes that reached the server:", writes)
	// Output:
	// get: 200
	// create: 409
	// writes that reached the server: 0
}
