package graph_test

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/convergo-dev/convergo/reconcile/apply"
	"github.com/convergo-dev/convergo/reconcile/graph"
)

// dnsRecord is the desired state of one DNS record.
type dnsRecord struct{ Address string }

// dnsZone stands in for a DNS provider's API: records by name, each with the owner mark Apply left
// in its comment. An External implements the four calls for one kind of external object.
type dnsZone struct {
	mu      sync.Mutex
	records map[string]dnsRecord
	comment map[string]string
}

func (z *dnsZone) Kind() string { return "dns.record" }

func (z *dnsZone) Observe(_ context.Context, name string, want dnsRecord) (graph.Observation, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	got, ok := z.records[name]
	if !ok {
		return graph.Observation{}, nil
	}
	return graph.Observation{Exists: true, Owner: z.comment[name], UpToDate: got == want, Ready: true}, nil
}

func (z *dnsZone) Apply(_ context.Context, name string, want dnsRecord, _ graph.Observation, owner string) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.records[name], z.comment[name] = want, owner
	fmt.Printf("  dns: %s -> %s\n", name, want.Address)
	return nil
}

func (z *dnsZone) Delete(_ context.Context, name string) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	delete(z.records, name)
	fmt.Printf("  dns: %s deleted\n", name)
	return nil
}

// An external node takes part in the graph like a child: here a DNS record that waits for the
// Service whose address it publishes, created once, left alone while it holds its intent, repaired
// after drift, and deleted before the Service when the owner goes.
func ExampleAddExternal() {
	ctx := context.Background()
	c := exampleClient() // in an operator: mgr.GetClient()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default", UID: "1234"}}
	if err := c.Create(ctx, owner); err != nil { // the owner exists: its record is written there
		fmt.Println(err)
		return
	}
	a := apply.NewApplier(c, c)
	zone := &dnsZone{records: map[string]dnsRecord{}, comment: map[string]string{}}

	children := func() *graph.Graph {
		g := graph.New()
		g.Add("service", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
		graph.AddExternal(g, "dns", zone, "shop.example.com", dnsRecord{Address: "10.0.0.7"}).DependsOn("service")
		return g
	}
	for _, step := range []string{"create", "converged", "drift"} {
		if step == "drift" {
			zone.records["shop.example.com"] = dnsRecord{Address: "10.9.9.9"} // changed by hand
		}
		fmt.Println(step + ":")
		res, err := children().Apply(ctx, a, owner)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("  dns %s, ready=%v, observe again in %v\n", res.Child("dns").Operation, res.Ready, res.ObserveAgain)
	}
	fmt.Println("recorded:", owner.GetAnnotations()["convergo.dev/external"])
	fmt.Println("delete:")
	for done := false; !done; {
		res, err := children().Delete(ctx, a, owner)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, d := range res.Deleted {
			fmt.Printf("  %s deleted\n", d.Name)
		}
		done = res.Done
	}
	// Output:
	// create:
	//   dns: shop.example.com -> 10.0.0.7
	//   dns Created, ready=true, observe again in 1m0s
	// converged:
	//   dns Unchanged, ready=true, observe again in 1m0s
	// drift:
	//   dns: shop.example.com -> 10.0.0.7
	//   dns Updated, ready=true, observe again in 1m0s
	// recorded: [{"node":"dns","kind":"dns.record","id":"shop.example.com","dependsOn":"service"}]
	// delete:
	//   dns: shop.example.com deleted
	//   service deleted
}
