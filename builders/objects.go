package builders

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ServiceOption changes a Service built by Service. Any func(*corev1.Service) is one.
type ServiceOption func(*corev1.Service)

// Service returns a Service with the standard labels that selects the pods of labels (by
// labels.Selector()), then applies opts in order; give it at least one port with WithServicePort.
//
// The type is left to the API server (ClusterIP) unless WithServiceType is given; clusterIP,
// sessionAffinity, ipFamilies, internalTrafficPolicy and port protocols are left to it as well.
func Service(name, namespace string, labels Labels, opts ...ServiceOption) *corev1.Service {
	s := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "Service"},
		ObjectMeta: labels.Meta(name, namespace),
		Spec:       corev1.ServiceSpec{Selector: labels.Selector()},
	}
	for _, opt := range opts {
		if opt != nil {
			opt(s)
		}
	}
	return s
}

// WithServicePort exposes port under name and sends its traffic to the container port of the
// same name (see WithPort), so that changing the container's port number never breaks the Service.
// A port of the same name is replaced.
func WithServicePort(name string, port int32) ServiceOption {
	return WithServicePorts(corev1.ServicePort{Name: name, Port: port, TargetPort: intstr.FromString(name)})
}

// WithServicePorts adds ports as given, replacing a port of the same name (e.g. to target a port
// number, or to set a nodePort or a protocol).
func WithServicePorts(ports ...corev1.ServicePort) ServiceOption {
	return func(s *corev1.Service) {
		for _, p := range ports {
			s.Spec.Ports = upsert(s.Spec.Ports, p, func(q corev1.ServicePort) bool { return q.Name == p.Name })
		}
	}
}

// WithServiceType sets the Service type (NodePort, LoadBalancer...).
func WithServiceType(t corev1.ServiceType) ServiceOption {
	return func(s *corev1.Service) { s.Spec.Type = t }
}

// WithHeadless makes the Service headless (clusterIP: None): its DNS name resolves to the pods'
// addresses, as a StatefulSet's governing Service needs. The cluster IP of an existing Service
// cannot be changed, so decide this before the first apply.
func WithHeadless() ServiceOption {
	return func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }
}

// ConfigMap returns a ConfigMap with the standard labels holding a copy of data. Set BinaryData or
// Immutable on the result when needed.
func ConfigMap(name, namespace string, labels Labels, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "ConfigMap"},
		ObjectMeta: labels.Meta(name, namespace),
		Data:       maps.Clone(data),
	}
}

// Secret returns a Secret with the standard labels holding data in its data field (bytes), never
// in stringData: the API server folds stringData into data and never returns it, so a desired
// stringData would look like drift on every comparison with the live object. The type is left to
// the API server (Opaque); set Type on the result for e.g. kubernetes.io/tls.
func Secret(name, namespace string, labels Labels, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "Secret"},
		ObjectMeta: labels.Meta(name, namespace),
	}
	if data != nil {
		s.Data = make(map[string][]byte, len(data))
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
	}
	return s
}

// ServiceAccount returns a ServiceAccount with the standard labels; run pods as it with
// WithServiceAccount and bind it to the Roles its pods need.
func ServiceAccount(name, namespace string, labels Labels) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: "ServiceAccount"},
		ObjectMeta: labels.Meta(name, namespace),
	}
}

// Annotate adds annotations to obj's metadata (an existing key is overwritten) and returns obj, so
// it works on any builder's result: Annotate(Service(...), map[string]string{...}). For the pod
// template of a workload use WithPodAnnotation.
func Annotate[T metav1.Object](obj T, annotations map[string]string) T {
	if len(annotations) > 0 {
		obj.SetAnnotations(merged(obj.GetAnnotations(), annotations))
	}
	return obj
}
