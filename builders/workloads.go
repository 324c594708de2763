package builders

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// DeploymentOption changes a Deployment built by Deployment. Any func(*appsv1.Deployment) is one.
type DeploymentOption func(*appsv1.Deployment)

// Deployment returns a Deployment with the standard labels, a selector of labels.Selector() and
// a deep copy of pod as its template (the selector labels are added to the template's labels, so
// the selector always matches), then applies opts in order.
//
// Replicas is left unset unless WithReplicas is given, so the API server's default (1) or a
// HorizontalPodAutoscaler owns it; strategy, revisionHistoryLimit, progressDeadlineSeconds and
// minReadySeconds are left to the API server too.
func Deployment(name, namespace string, labels Labels, pod corev1.PodTemplateSpec, opts ...DeploymentOption) *appsv1.Deployment {
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		ObjectMeta: labels.Meta(name, namespace),
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels.Selector()},
			Template: selectedTemplate(pod, labels),
		},
	}
	for _, opt := range opts {
		if opt != nil {
			opt(d)
		}
	}
	return d
}

// WithReplicas sets the desired number of pods; 0 is kept (scaled to zero), unlike leaving the
// option out, which leaves replicas to the API server default or an autoscaler.
func WithReplicas(n int32) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To(n) }
}

// WithRecreateStrategy makes the Deployment stop every old pod before starting new ones, for
// applications that must never run two versions at once (or share a ReadWriteOnce volume).
func WithRecreateStrategy() DeploymentOption {
	return func(d *appsv1.Deployment) {
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
}

// StatefulSetOption changes a StatefulSet built by StatefulSet. Any func(*appsv1.StatefulSet) is one.
type StatefulSetOption func(*appsv1.StatefulSet)

// StatefulSet returns a StatefulSet with the standard labels, a selector of labels.Selector() and
// a deep copy of pod as its template (the selector labels are added to the template's labels),
// then applies opts in order. Give it its governing headless Service with WithServiceName (see
// WithHeadless) so its pods get stable DNS names.
//
// Replicas, podManagementPolicy, updateStrategy, revisionHistoryLimit and the PVC retention
// policy are left to the API server unless an option sets them.
func StatefulSet(name, namespace string, labels Labels, pod corev1.PodTemplateSpec, opts ...StatefulSetOption) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "StatefulSet"},
		ObjectMeta: labels.Meta(name, namespace),
		Spec: appsv1.StatefulSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels.Selector()},
			Template: selectedTemplate(pod, labels),
		},
	}
	for _, opt := range opts {
		if opt != nil {
			opt(s)
		}
	}
	return s
}

// WithStatefulSetReplicas sets the desired number of pods of a StatefulSet; 0 is kept.
func WithStatefulSetReplicas(n int32) StatefulSetOption {
	return func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To(n) }
}

// WithServiceName names the StatefulSet's governing headless Service (immutable once created).
func WithServiceName(service string) StatefulSetOption {
	return func(s *appsv1.StatefulSet) { s.Spec.ServiceName = service }
}

// WithParallelPodManagement starts and stops the StatefulSet's pods all at once instead of one by
// one in ordinal order (the default, OrderedReady).
func WithParallelPodManagement() StatefulSetOption {
	return func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement }
}

// WithVolumeClaimTemplates adds PersistentVolumeClaim templates (build them with VolumeClaim),
// replacing one of the same name: every pod gets its own claim, mounted through a volume of the
// claim's name (WithVolumeMount(claimName, path)). The templates are immutable once created.
func WithVolumeClaimTemplates(claims ...corev1.PersistentVolumeClaim) StatefulSetOption {
	return func(s *appsv1.StatefulSet) {
		for _, c := range claims {
			c := *c.DeepCopy()
			s.Spec.VolumeClaimTemplates = upsert(s.Spec.VolumeClaimTemplates, c, func(d corev1.PersistentVolumeClaim) bool { return d.Name == c.Name })
		}
	}
}

// VolumeClaim returns a PersistentVolumeClaim template named name, ReadWriteOnce, requesting
// size of storage (e.g. "1Gi"; it panics on a malformed quantity, like WithRequests) from the
// cluster's default StorageClass; set Spec.StorageClassName on the result to pick another.
func VolumeClaim(name, size string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			},
		},
	}
}

// selectedTemplate deep-copies pod and makes its labels include the selector labels.
func selectedTemplate(pod corev1.PodTemplateSpec, labels Labels) corev1.PodTemplateSpec {
	t := *pod.DeepCopy()
	t.Labels = merged(t.Labels, labels.Selector())
	return t
}
