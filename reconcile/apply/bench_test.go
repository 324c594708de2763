package apply_test

import (
	"context"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/convergo-dev/convergo/internal/testapi"
	"github.com/convergo-dev/convergo/reconcile/apply"
)

// Micro-benchmarks of Apply's drift check: what a reconcile of a converged object costs per child when
// nothing needs writing (intent, hash, cache read, subset comparison), with allocations reported. Run
// them with
//
//	go test -run '^$' -bench . -benchmem ./reconcile/
//
// The live objects come from a cache-like reader (a deep copy per read, as controller-runtime's cache
// does), holding what an API server returns: the applied fields plus server defaults, managed fields
// and status. Writes go to the fake client and must never happen inside the timed loop.

func benchScheme(b *testing.B) *runtime.Scheme {
	b.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, testapi.AddToScheme} {
		if err := add(s); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

func benchMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{
		{Version: "v1", Kind: "ConfigMap"},
		{Version: "v1", Kind: "Service"},
		{Group: "apps", Version: "v1", Kind: "Deployment"},
		testapi.GroupVersion.WithKind("Widget"),
	} {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	return m
}

// cacheReader serves Get from snapshots of live objects, deep-copied per read like the informer
// cache; everything else goes to the embedded client.
type cacheReader struct {
	client.Client
	scheme *runtime.Scheme
	live   map[client.ObjectKey]map[reflect.Type]client.Object
	hits   int
}

func (c *cacheReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	live, ok := c.live[key][reflect.TypeOf(obj)]
	if !ok {
		return c.Client.Get(ctx, key, obj, opts...)
	}
	c.hits++
	cp := live.DeepCopyObject()
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(cp).Elem())
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// snapshot stores the fake client's current copy of obj, adjusted by serverSide, as the cached object.
func (c *cacheReader) snapshot(b *testing.B, obj client.Object, serverSide func(client.Object)) {
	b.Helper()
	key := client.ObjectKeyFromObject(obj)
	live := obj.DeepCopyObject().(client.Object)
	if err := c.Client.Get(b.Context(), key, live); err != nil {
		b.Fatalf("read %s: %v", key, err)
	}
	live.SetManagedFields([]metav1.ManagedFieldsEntry{{
		Manager: "convergo", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{"f:convergo.dev/intent-hash":{}},"f:labels":{"f:app.kubernetes.io/name":{}},"f:ownerReferences":{"k:{\"uid\":\"uid-owner\"}":{}}},"f:spec":{}}`)},
	}})
	if serverSide != nil {
		serverSide(live)
	}
	if c.live[key] == nil {
		c.live[key] = map[reflect.Type]client.Object{}
	}
	c.live[key][reflect.TypeOf(obj)] = live
}

func benchLabels() map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":      "welcome",
		"app.kubernetes.io/instance":  "alice",
		"app.kubernetes.io/component": "web",
	}
}

func benchConfigMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "alice", Labels: benchLabels()},
		Data:       map[string]string{"page.html": "<dl class=\"profile\">\n<dt>E-mail</dt><dd>alice@example.com</dd>\n</dl>\n"},
	}
}

func benchDeployment() *appsv1.Deployment {
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(8088)}}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "alice", Labels: benchLabels()},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: benchLabels()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: benchLabels(), Annotations: map[string]string{"convergo.dev/config-hash": "3f2a9c"}},
				Spec: corev1.PodSpec{
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:  "web",
						Image: "ghcr.io/convergo-dev/welcome-web:v0.1.0",
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8088}},
						Env: []corev1.EnvVar{
							{Name: "NAME", Value: "Alice"},
							{Name: "PORT", Value: "8088"},
							{Name: "PAGE_FILE", Value: "/etc/welcome/page.html"},
						},
						VolumeMounts:   []corev1.VolumeMount{{Name: "page", MountPath: "/etc/welcome", ReadOnly: true}},
						LivenessProbe:  probe("/healthz"),
						ReadinessProbe: probe("/hello/"),
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							ReadOnlyRootFilesystem:   ptr.To(true),
						},
					}},
					Volumes: []corev1.Volume{{Name: "page", VolumeSource: corev1.VolumeSource{
						ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "alice"}},
					}}},
				},
			},
		},
	}
}

// defaultDeployment adds what the API server and the deployment controller put on a Deployment.
func defaultDeployment(obj client.Object) {
	d := obj.(*appsv1.Deployment)
	d.Generation = 1
	d.Annotations["deployment.kubernetes.io/revision"] = "1"
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%")),
	}}
	d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	pod := &d.Spec.Template.Spec
	pod.RestartPolicy = corev1.RestartPolicyAlways
	pod.DNSPolicy = corev1.DNSClusterFirst
	pod.SchedulerName = corev1.DefaultSchedulerName
	pod.TerminationGracePeriodSeconds = ptr.To[int64](30)
	for i := range pod.Containers {
		c := &pod.Containers[i]
		c.ImagePullPolicy = corev1.PullIfNotPresent
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
		c.Ports[0].Protocol = corev1.ProtocolTCP
		for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
			p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold = 1, 10, 1, 3
			p.HTTPGet.Scheme = corev1.URISchemeHTTP
		}
	}
	pod.Volumes[0].ConfigMap.DefaultMode = ptr.To[int32](0o644)
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: `ReplicaSet "alice-5d8f7c9b4" has successfully progressed.`},
		},
	}
}

func benchService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "alice", Labels: benchLabels()},
		Spec: corev1.ServiceSpec{
			Selector: benchLabels(),
			Ports:    []corev1.ServicePort{{Name: "http", Port: 8088, TargetPort: intstr.FromString("http")}},
		},
	}
}

// defaultService adds what the API server puts on a ClusterIP Service.
func defaultService(obj client.Object) {
	s := obj.(*corev1.Service)
	s.Spec.Type = corev1.ServiceTypeClusterIP
	s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.12.34", []string{"10.96.12.34"}
	s.Spec.SessionAffinity = corev1.ServiceAffinityNone
	s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	s.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
	s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	s.Spec.Ports[0].Protocol = corev1.ProtocolTCP
}

// BenchmarkApplyUnchanged is Apply of a child that already holds its intent: the steady state of every
// reconcile of a converged object. It must report OperationUnchanged and send nothing.
func BenchmarkApplyUnchanged(b *testing.B) {
	cases := map[string]struct {
		desired    func() client.Object
		serverSide func(client.Object)
	}{
		"ConfigMap":  {desired: func() client.Object { return benchConfigMap() }},
		"Deployment": {desired: func() client.Object { return benchDeployment() }, serverSide: defaultDeployment},
		"Service":    {desired: func() client.Object { return benchService() }, serverSide: defaultService},
	}
	for name, tc := range cases {
		b.Run(name, func(b *testing.B) {
			scheme := benchScheme(b)
			base := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(benchMapper()).Build()
			c := &cacheReader{Client: base, scheme: scheme, live: map[client.ObjectKey]map[reflect.Type]client.Object{}}
			a := apply.NewApplier(c, c, apply.WithFieldManager("convergo"))
			owner := &testapi.Widget{ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: "ns", UID: "uid-owner"}}

			desired := tc.desired()
			if _, op, err := a.Apply(b.Context(), owner, desired); err != nil || op != apply.OperationCreated {
				b.Fatalf("first apply: %s, %v; want Created", op, err)
			}
			live := desired.DeepCopyObject().(client.Object)
			live.SetNamespace(owner.Namespace)
			c.snapshot(b, live, tc.serverSide)

			b.ReportAllocs()
			for b.Loop() {
				_, op, err := a.Apply(b.Context(), owner, desired)
				if err != nil || op != apply.OperationUnchanged {
					b.Fatalf("apply of a converged child: %s, %v; want Unchanged", op, err)
				}
			}
			if c.hits == 0 {
				b.Fatal("Apply never read the cached live object")
			}
		})
	}
}
