package builders_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/builders"
)

type readyCheck = func(client.Object) (bool, string)

type readyCase struct {
	obj        client.Object
	wantReady  bool
	wantReason string
	asGiven    bool // check only obj as given, not its other forms
}

// runReadyCases runs check on every case's object, and again on its unstructured form (with and
// without TypeMeta on the typed object), expecting the same answer.
func runReadyCases(t *testing.T, check readyCheck, cases map[string]readyCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			forms := map[string]client.Object{"as given": tc.obj}
			if _, isU := tc.obj.(*unstructured.Unstructured); !isU && !tc.asGiven {
				forms["unstructured"] = toUnstructured(t, tc.obj)
				bare := tc.obj.DeepCopyObject().(client.Object)
				bare.GetObjectKind().SetGroupVersionKind(bare.GetObjectKind().GroupVersionKind().GroupVersion().WithKind(""))
				forms["typed without TypeMeta"] = bare
			}
			for form, obj := range forms {
				ready, reason := check(obj)
				type result struct {
					Ready  bool
					Reason string
				}
				if diff := cmp.Diff(result{tc.wantReady, tc.wantReason}, result{ready, reason}); diff != "" {
					t.Errorf("%s: (-want +got):\n%s", form, diff)
				}
			}
		})
	}
}

func deployment(replicas *int32, generation int64, status appsv1.DeploymentStatus) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Generation: generation},
		Spec:       appsv1.DeploymentSpec{Replicas: replicas},
		Status:     status,
	}
}

func TestDeploymentAvailable(t *testing.T) {
	three := ptr.To[int32](3)
	runReadyCases(t, builders.DeploymentAvailable, map[string]readyCase{
		"available": {
			obj:       deployment(three, 2, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3}),
			wantReady: true,
		},
		"replicas default to one": {
			obj:       deployment(nil, 1, appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}),
			wantReady: true,
		},
		"scaled to zero": {
			obj:       deployment(ptr.To[int32](0), 4, appsv1.DeploymentStatus{ObservedGeneration: 4}),
			wantReady: true,
		},
		"generation not observed": {
			obj:        deployment(three, 3, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3}),
			wantReason: "waiting for observedGeneration 3 (at 2)",
		},
		"not all updated": {
			obj:        deployment(three, 1, appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 1, AvailableReplicas: 3}),
			wantReason: "1/3 replicas updated",
		},
		"old replicas left": {
			obj:        deployment(three, 1, appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 4, UpdatedReplicas: 3, AvailableReplicas: 3}),
			wantReason: "1 old replicas pending termination",
		},
		"scaling down": {
			obj:        deployment(three, 1, appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 5, UpdatedReplicas: 5, AvailableReplicas: 5}),
			wantReason: "scaling down: 5 replicas, want 3",
		},
		"not all available": {
			obj:        deployment(three, 1, appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 2}),
			wantReason: "2/3 replicas available",
		},
		"progress deadline exceeded": {
			obj: deployment(three, 1, appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 1,
				Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
					Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "web-1" has timed out progressing.`}}}),
			wantReason: `progress deadline exceeded: ReplicaSet "web-1" has timed out progressing.`,
		},
		"nil": {
			obj:        (*appsv1.Deployment)(nil),
			wantReason: "not observed yet",
			asGiven:    true,
		},
		"other kind": {
			obj:        builders.Service("s", "ns", testLabels),
			wantReason: "expected a Deployment.apps, got *v1.Service",
			asGiven:    true,
		},
		"unstructured of another kind": {
			obj:        toUnstructuredValue(builders.Service("s", "ns", testLabels)),
			wantReason: "expected a Deployment.apps, got Service",
		},
	})
}

func toUnstructuredValue(obj client.Object) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	u.SetName(obj.GetName())
	u.SetNamespace(obj.GetNamespace())
	return u
}

func statefulSet(replicas *int32, strategy appsv1.StatefulSetUpdateStrategy, status appsv1.StatefulSetStatus) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", Generation: 2},
		Spec:       appsv1.StatefulSetSpec{Replicas: replicas, UpdateStrategy: strategy},
		Status:     status,
	}
}

func TestStatefulSetReady(t *testing.T) {
	three := ptr.To[int32](3)
	rolling := appsv1.StatefulSetUpdateStrategy{}
	partitioned := appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](2)}}
	onDelete := appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	done := appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
		UpdatedReplicas: 3, CurrentReplicas: 3, CurrentRevision: "db-2", UpdateRevision: "db-2"}
	with := func(f func(*appsv1.StatefulSetStatus)) appsv1.StatefulSetStatus {
		s := done
		f(&s)
		return s
	}
	runReadyCases(t, builders.StatefulSetReady, map[string]readyCase{
		"ready": {obj: statefulSet(three, rolling, done), wantReady: true},
		"generation not observed": {
			obj:        statefulSet(three, rolling, with(func(s *appsv1.StatefulSetStatus) { s.ObservedGeneration = 1 })),
			wantReason: "waiting for observedGeneration 2 (at 1)",
		},
		"not all ready": {
			obj:        statefulSet(three, rolling, with(func(s *appsv1.StatefulSetStatus) { s.ReadyReplicas, s.AvailableReplicas = 2, 2 })),
			wantReason: "2/3 replicas ready",
		},
		"ready but not yet available": {
			obj:        statefulSet(three, rolling, with(func(s *appsv1.StatefulSetStatus) { s.AvailableReplicas = 1 })),
			wantReason: "1/3 replicas available",
		},
		"scaling down": {
			obj:        statefulSet(three, rolling, with(func(s *appsv1.StatefulSetStatus) { s.Replicas = 4 })),
			wantReason: "scaling down: 4 replicas, want 3",
		},
		"rolling update in progress": {
			obj: statefulSet(three, rolling, with(func(s *appsv1.StatefulSetStatus) {
				s.UpdateRevision, s.UpdatedReplicas = "db-3", 1
			})),
			wantReason: "rolling update to revision db-3: 1/3 replicas updated",
		},
		"partition reached": {
			obj: statefulSet(three, partitioned, with(func(s *appsv1.StatefulSetStatus) {
				s.UpdateRevision, s.UpdatedReplicas = "db-3", 1
			})),
			wantReady: true,
		},
		"partition not reached": {
			obj: statefulSet(three, partitioned, with(func(s *appsv1.StatefulSetStatus) {
				s.UpdateRevision, s.UpdatedReplicas = "db-3", 0
			})),
			wantReason: "0/1 replicas above partition 2 updated",
		},
		"on delete ignores revisions": {
			obj: statefulSet(three, onDelete, with(func(s *appsv1.StatefulSetStatus) {
				s.UpdateRevision, s.UpdatedReplicas = "db-3", 0
			})),
			wantReady: true,
		},
		"replicas default to one": {
			obj:        statefulSet(nil, rolling, appsv1.StatefulSetStatus{ObservedGeneration: 2}),
			wantReason: "0/1 replicas ready",
		},
		"other kind": {
			obj:        builders.ConfigMap("c", "ns", testLabels, nil),
			wantReason: "expected a StatefulSet.apps, got *v1.ConfigMap",
			asGiven:    true,
		},
	})
}

func service(typ corev1.ServiceType, clusterIP string, ingress ...corev1.LoadBalancerIngress) *corev1.Service {
	s := builders.Service("web", "ns", testLabels, builders.WithServicePort("http", 80), builders.WithServiceType(typ))
	s.Spec.ClusterIP = clusterIP
	s.Status.LoadBalancer.Ingress = ingress
	return s
}

func TestServiceReady(t *testing.T) {
	runReadyCases(t, builders.ServiceReady, map[string]readyCase{
		"cluster IP assigned":    {obj: service("", "10.96.0.12"), wantReady: true},
		"no cluster IP":          {obj: service("", ""), wantReason: "no cluster IP yet"},
		"headless":               {obj: service("", "None"), wantReady: true},
		"external name":          {obj: service(corev1.ServiceTypeExternalName, ""), wantReady: true},
		"node port":              {obj: service(corev1.ServiceTypeNodePort, "10.96.0.12"), wantReady: true},
		"load balancer pending":  {obj: service(corev1.ServiceTypeLoadBalancer, "10.96.0.12"), wantReason: "waiting for load balancer ingress"},
		"load balancer no IP":    {obj: service(corev1.ServiceTypeLoadBalancer, ""), wantReason: "no cluster IP yet"},
		"load balancer provided": {obj: service(corev1.ServiceTypeLoadBalancer, "10.96.0.12", corev1.LoadBalancerIngress{IP: "203.0.113.7"}), wantReady: true},
	})
}

func job(spec batchv1.JobSpec, status batchv1.JobStatus) *batchv1.Job {
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "migrate", Namespace: "ns", Generation: 1},
		Spec:       spec,
		Status:     status,
	}
}

func TestJobComplete(t *testing.T) {
	cond := func(typ batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string) batchv1.JobStatus {
		return batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: typ, Status: status, Reason: reason, Message: message}}}
	}
	runReadyCases(t, builders.JobComplete, map[string]readyCase{
		"complete": {obj: job(batchv1.JobSpec{}, cond(batchv1.JobComplete, corev1.ConditionTrue, "CompletionsReached", "")), wantReady: true},
		"failed": {
			obj:        job(batchv1.JobSpec{}, cond(batchv1.JobFailed, corev1.ConditionTrue, "BackoffLimitExceeded", "Job has reached the specified backoff limit")),
			wantReason: "job failed: BackoffLimitExceeded: Job has reached the specified backoff limit",
		},
		"suspended": {
			obj:        job(batchv1.JobSpec{Suspend: ptr.To(true)}, cond(batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "")),
			wantReason: "job suspended",
		},
		"running with completions": {
			obj:        job(batchv1.JobSpec{Completions: ptr.To[int32](5)}, batchv1.JobStatus{Succeeded: 2, Active: 1}),
			wantReason: "2/5 completions succeeded, 1 active",
		},
		"running as a work queue": {
			obj:        job(batchv1.JobSpec{}, batchv1.JobStatus{Active: 3}),
			wantReason: "running: 0 succeeded, 3 active",
		},
		"complete condition false": {
			obj:        job(batchv1.JobSpec{Completions: ptr.To[int32](1)}, cond(batchv1.JobComplete, corev1.ConditionFalse, "", "")),
			wantReason: "0/1 completions succeeded, 0 active",
		},
	})
}

// custom is a custom resource as a typed Go struct, unknown to the client-go scheme.
type custom struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            customStatus `json:"status,omitempty"`
}

type customStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

func (c *custom) DeepCopyObject() runtime.Object {
	out := *c
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Status.Conditions = append([]metav1.Condition(nil), c.Status.Conditions...)
	return &out
}

func customObject(generation, observed int64, conds ...metav1.Condition) *custom {
	return &custom{
		TypeMeta:   metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", Generation: generation},
		Status:     customStatus{ObservedGeneration: observed, Conditions: conds},
	}
}

func cond(typ string, status metav1.ConditionStatus, reason, message string, generation int64) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: generation}
}

func TestConditionsReady(t *testing.T) {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.com", "generation": int64(1)},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "NamesAccepted", "status": "True"},
			map[string]any{"type": "Established", "status": "True"},
		}},
	}}
	runReadyCases(t, builders.ConditionsReady, map[string]readyCase{
		"ready": {
			obj:       customObject(2, 2, cond("Ready", metav1.ConditionTrue, "Reconciled", "", 2)),
			wantReady: true,
		},
		"ready without observedGeneration anywhere": {
			obj:       customObject(2, 0, cond("Ready", metav1.ConditionTrue, "Reconciled", "", 0)),
			wantReady: true,
		},
		"status generation behind": {
			obj:        customObject(3, 2, cond("Ready", metav1.ConditionTrue, "Reconciled", "", 3)),
			wantReason: "waiting for observedGeneration 3 (at 2)",
		},
		"ready condition generation behind": {
			obj:        customObject(3, 3, cond("Ready", metav1.ConditionTrue, "Reconciled", "", 2)),
			wantReason: "Ready condition is for generation 2, waiting for 3",
		},
		"not ready": {
			obj:        customObject(1, 1, cond("Ready", metav1.ConditionFalse, "DeploymentNotAvailable", "1/3 replicas available", 1)),
			wantReason: "Ready=False: DeploymentNotAvailable: 1/3 replicas available",
		},
		"unknown": {
			obj:        customObject(1, 1, cond("Ready", metav1.ConditionUnknown, "", "", 1)),
			wantReason: "Ready=Unknown: no reason given",
		},
		"reconciling": {
			obj: customObject(1, 1,
				cond("Reconciling", metav1.ConditionTrue, "Progressing", "applying deployment", 1),
				cond("Ready", metav1.ConditionFalse, "Progressing", "applying deployment", 1)),
			wantReason: "reconciling: Progressing: applying deployment",
		},
		"stalled wins over reconciling": {
			obj: customObject(1, 1,
				cond("Reconciling", metav1.ConditionTrue, "Progressing", "", 1),
				cond("Stalled", metav1.ConditionTrue, "InvalidSpec", "size must be positive", 1),
				cond("Ready", metav1.ConditionTrue, "Stale", "", 1)),
			wantReason: "stalled: InvalidSpec: size must be positive",
		},
		"abnormal conditions false are fine": {
			obj: customObject(1, 1,
				cond("Reconciling", metav1.ConditionFalse, "Done", "", 1),
				cond("Stalled", metav1.ConditionFalse, "Fine", "", 1),
				cond("Ready", metav1.ConditionTrue, "Reconciled", "", 1)),
			wantReady: true,
		},
		"no conditions yet": {
			obj:        customObject(1, 0),
			wantReason: "no Ready condition yet",
		},
		"CRD established": {obj: crd, wantReady: true},
		"deployment delegates to DeploymentAvailable": {
			obj:        deployment(ptr.To[int32](3), 1, appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 2}),
			wantReason: "2/3 replicas available",
		},
		"statefulset delegates to StatefulSetReady": {
			obj:        statefulSet(ptr.To[int32](1), appsv1.StatefulSetUpdateStrategy{}, appsv1.StatefulSetStatus{ObservedGeneration: 2}),
			wantReason: "0/1 replicas ready",
		},
		"service delegates to ServiceReady": {obj: service("", "10.96.0.1"), wantReady: true},
		"job delegates to JobComplete": {
			obj:        job(batchv1.JobSpec{}, batchv1.JobStatus{Active: 1}),
			wantReason: "running: 0 succeeded, 1 active",
		},
		"pod uses its Ready condition": {
			obj: &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "p"},
				Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}}}},
			wantReason: "Ready=False: ContainersNotReady",
		},
		"nil":       {obj: nil, wantReason: "not observed yet", asGiven: true},
		"nil typed": {obj: (*custom)(nil), wantReason: "not observed yet", asGiven: true},
	})
}
