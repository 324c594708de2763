package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/testing/cluster"
)

func main() {
	n := flag.Int("n", 100, "Welcomes per batch: each writes their three children by one method")
	batches := flag.Int("batches", 8, "measured batches per method, after one unmeasured batch of each")
	workers := flag.Int("workers", 4, "concurrent writers")
	flag.Parse()
	if err := run(context.Background(), *n, *batches, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "applycost:", err)
		os.Exit(1)
	}
}

// sample is one method's cost in one batch.
type sample struct {
	method          string
	apiServer, etcd time.Duration
	wall            time.Duration
	objects         int
	meanLatency     time.Duration
	bytesSent       int
}

// order is the methods' order in pair i: create, apply, then apply, create (ABBA), so that a cost that
// grows with the objects stored weighs on both methods alike.
func order(i int) []string {
	if i%2 == 0 {
		return []string{"create", "apply"}
	}
	return []string{"apply", "create"}
}

func run(ctx context.Context, n, batches, workers int) error {
	c, err := cluster.Start(ctx, cluster.WithNodes(0), cluster.WithoutScheduler(),
		// The service-account controllers only: the start waits for the default ServiceAccount.
		cluster.WithExtraArgs(cluster.ControllerManager, "--controllers=serviceaccount,serviceaccount-token"))
	if err != nil {
		return err
	}
	defer c.Stop()
	cfg := *c.Config
	cfg.QPS, cfg.Burst = -1, -1
	cl, err := client.New(&cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	var samples []sample
	for i := range batches + 1 { // pair 0 warms both paths up and is not counted
		for _, m := range order(i) {
			ns := fmt.Sprintf("%s-%d", m, i)
			if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				return fmt.Errorf("namespace: %w", err)
			}
			time.Sleep(2 * time.Second) // let the namespace's own writes settle
			s, err := measure(ctx, c, cl, m, ns, n, workers)
			if err != nil {
				return err
			}
			label := fmt.Sprintf("batch %d", i)
			if i == 0 {
				label = "warm-up"
			} else {
				samples = append(samples, s)
			}
			fmt.Printf("%-8s %-6s  kube-apiserver %6.2f ms/object  etcd %5.2f ms/object  wall %6.2f s  mean latency %5.1f ms  body %d B/object\n",
				label, m, perObject(s.apiServer, s.objects), perObject(s.etcd, s.objects), s.wall.Seconds(),
				float64(s.meanLatency.Microseconds())/1000, s.bytesSent/s.objects)
		}
	}
	fmt.Print(report(samples))
	return nil
}

func perObject(d time.Duration, objects int) float64 {
	return float64(d.Microseconds()) / 1000 / float64(objects)
}

// report is a table of each method's CPU per object over all its batches, and the ratio apply/create.
func report(samples []sample) string {
	total := func(method string, f func(sample) time.Duration) float64 {
		var d time.Duration
		objects := 0
		for _, s := range samples {
			if s.method == method {
				d += f(s)
				objects += s.objects
			}
		}
		return perObject(d, objects)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n| per object (all measured batches) | create | apply | apply/create |\n|---|---:|---:|---:|\n")
	for _, row := range []struct {
		name string
		f    func(sample) time.Duration
	}{
		{"kube-apiserver CPU (ms)", func(s sample) time.Duration { return s.apiServer }},
		{"etcd CPU (ms)", func(s sample) time.Duration { return s.etcd }},
	} {
		cr, ap := total("create", row.f), total("apply", row.f)
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.2f |\n", row.name, cr, ap, ap/cr)
	}
	return b.String()
}

// measure writes n objects of each kind into ns by method and returns what the API server and etcd
// spent meanwhile.
func measure(ctx context.Context, c *cluster.Cluster, cl client.Client, method, ns string, n, workers int) (sample, error) {
	before, err := serverCPU(c)
	if err != nil {
		return sample{}, err
	}
	var mu sync.Mutex
	var latency time.Duration
	var sent int
	begin := time.Now()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i := range n {
		for _, obj := range children(ns, fmt.Sprintf("w%04d", i)) {
			g.Go(func() error {
				start := time.Now()
				size, err := write(ctx, cl, method, obj)
				mu.Lock()
				latency += time.Since(start)
				sent += size
				mu.Unlock()
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return sample{}, err
	}
	wall := time.Since(begin)
	after, err := serverCPU(c)
	if err != nil {
		return sample{}, err
	}
	objects := 3 * n
	return sample{method: method, apiServer: after[0] - before[0], etcd: after[1] - before[1], wall: wall,
		objects: objects, meanLatency: latency / time.Duration(objects), bytesSent: sent}, nil
}

// serverCPU is the CPU time kube-apiserver and etcd have used so far, in that order.
func serverCPU(c *cluster.Cluster) ([2]time.Duration, error) {
	var used [2]time.Duration
	for i, comp := range []cluster.Component{cluster.APIServer, cluster.Etcd} {
		d, err := c.CPUTime(comp)
		if err != nil {
			return used, fmt.Errorf("cpu time of %s: %w", comp, err)
		}
		used[i] = d
	}
	return used, nil
}

// write creates obj by method and returns the size of the body sent (for apply; 0 for create).
func write(ctx context.Context, cl client.Client, method string, obj client.Object) (int, error) {
	if method == "create" {
		return 0, cl.Create(ctx, obj)
	}
	body, err := applyBody(obj)
	if err != nil {
		return 0, err
	}
	patch := client.RawPatch(types.ApplyPatchType, body)
	return len(body), cl.Patch(ctx, obj, patch, client.FieldOwner("applycost"), client.ForceOwnership,
		client.FieldValidation(metav1.FieldValidationIgnore))
}

// applyBody is obj as an apply patch: its JSON without status, nulls and empty maps, as an operator's
// intent holds only the fields it sets.
func applyBody(obj client.Object) ([]byte, error) {
	gvks, _, err := clientgoscheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return nil, err
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	content["apiVersion"], content["kind"] = gvks[0].GroupVersion().String(), gvks[0].Kind
	delete(content, "status")
	prune(content)
	return json.Marshal(content)
}

// prune drops the nulls and the maps left empty (creationTimestamp: null, strategy: {}, resources: {}),
// which an operator's intent leaves out.
func prune(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(v)
			if len(v) == 0 {
				delete(m, k)
			}
		case []any:
			for _, item := range v {
				if im, ok := item.(map[string]any); ok {
					prune(im)
				}
			}
		}
	}
}

// children are the Welcome example's three children of one Welcome, as the expert builds them.
func children(ns, name string) []client.Object {
	labels := map[string]string{"app.kubernetes.io/name": "welcome", "app.kubernetes.io/instance": name,
		"app.kubernetes.io/managed-by": "applycost"}
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
	}
	page := "<html><body><h1>Welcome, " + name + "</h1>" + strings.Repeat("<p>Hello.</p>", 40) + "</body></html>"
	cm := &corev1.ConfigMap{ObjectMeta: meta(), Data: map[string]string{"index.html": page}}
	svc := &corev1.Service{ObjectMeta: meta(), Spec: corev1.ServiceSpec{
		Selector: labels,
		Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
	}}
	dep := &appsv1.Deployment{ObjectMeta: meta(), Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name: "web", Image: "registry.example/welcome:1.0",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
					Env:   []corev1.EnvVar{{Name: "PAGE", Value: "/srv/index.html"}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
						HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}},
					VolumeMounts: []corev1.VolumeMount{{Name: "page", MountPath: "/srv"}},
				}},
				Volumes: []corev1.Volume{{Name: "page", VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}},
			},
		},
	}}
	return []client.Object{cm, svc, dep}
}
