package intent

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func benchDeployment() *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": "welcome", "app.kubernetes.io/instance": "alice"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "alice", Namespace: "ns", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "nginx:1.27", Args: []string{"--port=8080"},
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				}}},
			},
		},
	}
}

// BenchmarkOf is the first step of the drift check: the fields a typed desired object sets.
func BenchmarkOf(b *testing.B) {
	scheme := testScheme(b)
	desired := benchDeployment()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Of(desired, scheme); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHash is the hash of a Deployment's intent.
func BenchmarkHash(b *testing.B) {
	in, err := Of(benchDeployment(), testScheme(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Hash(in); err != nil {
			b.Fatal(err)
		}
	}
}
