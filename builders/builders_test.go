package builders_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/builders"
)

var testLabels = builders.Labels{
	Name: "web", Instance: "shop", Component: "frontend", PartOf: "store", ManagedBy: "store-operator", Version: "2.1.0",
}

var (
	allLabels = map[string]string{
		"app.kubernetes.io/name":       "web",
		"app.kubernetes.io/instance":   "shop",
		"app.kubernetes.io/component":  "frontend",
		"app.kubernetes.io/part-of":    "store",
		"app.kubernetes.io/managed-by": "store-operator",
		"app.kubernetes.io/version":    "2.1.0",
	}
	selectorLabels = map[string]string{
		"app.kubernetes.io/name":      "web",
		"app.kubernetes.io/instance":  "shop",
		"app.kubernetes.io/component": "frontend",
	}
)

func restrictedContainerSC() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		ReadOnlyRootFilesystem:   ptr.To(true),
	}
}

func restrictedPodSC() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func TestLabels(t *testing.T) {
	cases := map[string]struct {
		labels       builders.Labels
		wantAll      map[string]string
		wantSelector map[string]string
		wantErr      string
	}{
		"full set": {
			labels:       testLabels,
			wantAll:      allLabels,
			wantSelector: selectorLabels,
		},
		"empty fields are left out": {
			labels: builders.Labels{Name: "web", Instance: "shop", Version: "1"},
			wantAll: map[string]string{
				"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": "shop", "app.kubernetes.io/version": "1",
			},
			wantSelector: map[string]string{"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": "shop"},
		},
		"zero value": {
			labels:  builders.Labels{},
			wantErr: "empty selector",
		},
		"invalid value": {
			labels:       builders.Labels{Name: "web", Instance: "shop", Version: "1.0+build/7"},
			wantAll:      map[string]string{"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": "shop", "app.kubernetes.io/version": "1.0+build/7"},
			wantSelector: map[string]string{"app.kubernetes.io/name": "web", "app.kubernetes.io/instance": "shop"},
			wantErr:      `label app.kubernetes.io/version="1.0+build/7"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantAll, tc.labels.All()); diff != "" {
				t.Errorf("All() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSelector, tc.labels.Selector()); diff != "" {
				t.Errorf("Selector() (-want +got):\n%s", diff)
			}
			err := tc.labels.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestSelectorIgnoresVersion(t *testing.T) {
	v1, v2 := testLabels, testLabels
	v2.Version, v2.PartOf, v2.ManagedBy = "3.0.0", "other", "other-operator"
	if diff := cmp.Diff(v1.Selector(), v2.Selector()); diff != "" {
		t.Errorf("selector changed with version/part-of/managed-by (-v1 +v2):\n%s", diff)
	}
	d1 := builders.Deployment("web", "ns", v1, builders.PodTemplate(v1, nil))
	d2 := builders.Deployment("web", "ns", v2, builders.PodTemplate(v2, nil))
	if diff := cmp.Diff(d1.Spec.Selector, d2.Spec.Selector); diff != "" {
		t.Errorf("Deployment selector changed across versions (-v1 +v2):\n%s", diff)
	}
}

func TestContainer(t *testing.T) {
	cases := map[string]struct {
		opts []builders.ContainerOption
		want corev1.Container
	}{
		"defaults": {
			want: corev1.Container{Name: "app", Image: "example.com/app:1", SecurityContext: restrictedContainerSC()},
		},
		"every option": {
			opts: []builders.ContainerOption{
				builders.WithCommand("/app"),
				builders.WithArgs("--verbose", "--port=8080"),
				builders.WithPort("http", 8080),
				builders.WithPorts(corev1.ContainerPort{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}),
				builders.WithEnv(
					builders.EnvLiteral("MODE", "fast"),
					builders.EnvFromConfigMap("LEVEL", "app-config", "level"),
					builders.EnvFromSecret("PASSWORD", "app-secret", "password"),
					builders.EnvFromField("NAMESPACE", "metadata.namespace"),
				),
				builders.WithEnvFrom(corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "all"}}}),
				builders.WithLivenessProbe(builders.HTTPProbe("/healthz", 8080)),
				builders.WithReadinessProbe(builders.TCPProbe(8080)),
				builders.WithStartupProbe(builders.ExecProbe("/bin/check")),
				builders.WithRequests("100m", "64Mi"),
				builders.WithLimits("", "128Mi"),
				builders.WithVolumeMount("tmp", "/tmp"),
				builders.WithReadOnlyVolumeMount("config", "/etc/app"),
				builders.WithImagePullPolicy(corev1.PullIfNotPresent),
			},
			want: corev1.Container{
				Name: "app", Image: "example.com/app:1",
				Command: []string{"/app"},
				Args:    []string{"--verbose", "--port=8080"},
				Ports: []corev1.ContainerPort{
					{Name: "http", ContainerPort: 8080},
					{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
				},
				Env: []corev1.EnvVar{
					{Name: "MODE", Value: "fast"},
					{Name: "LEVEL", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Key: "level"}}},
					{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "app-secret"}, Key: "password"}}},
					{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
				},
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "all"}}}},
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}},
				StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					Exec: &corev1.ExecAction{Command: []string{"/bin/check"}}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "tmp", MountPath: "/tmp"},
					{Name: "config", MountPath: "/etc/app", ReadOnly: true},
				},
				ImagePullPolicy: corev1.PullIfNotPresent,
				SecurityContext: restrictedContainerSC(),
			},
		},
		"later options replace by name": {
			opts: []builders.ContainerOption{
				builders.WithPort("http", 8080),
				builders.WithEnv(builders.EnvLiteral("MODE", "slow"), builders.EnvLiteral("KEEP", "1")),
				builders.WithPort("http", 9090),
				builders.WithEnv(builders.EnvLiteral("MODE", "fast")),
				builders.WithVolumeMount("a", "/data"),
				builders.WithReadOnlyVolumeMount("b", "/data"),
				builders.WithRequests("1", ""),
				builders.WithRequests("", "1Gi"),
				builders.WithLivenessProbe(builders.TCPProbe(1)),
				builders.WithLivenessProbe(builders.GRPCProbe(2)),
			},
			want: corev1.Container{
				Name: "app", Image: "example.com/app:1",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 9090}},
				Env:   []corev1.EnvVar{{Name: "MODE", Value: "fast"}, {Name: "KEEP", Value: "1"}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "b", MountPath: "/data", ReadOnly: true},
				},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
				LivenessProbe:   &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 2}}},
				SecurityContext: restrictedContainerSC(),
			},
		},
		"writable root filesystem": {
			opts: []builders.ContainerOption{builders.WithWritableRootFilesystem()},
			want: corev1.Container{Name: "app", Image: "example.com/app:1", SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			}},
		},
		"resources as given": {
			opts: []builders.ContainerOption{builders.WithResources(corev1.ResourceRequirements{
				Limits: corev1.ResourceList{"example.com/gpu": resource.MustParse("1")},
			})},
			want: corev1.Container{Name: "app", Image: "example.com/app:1", SecurityContext: restrictedContainerSC(),
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}}},
		},
		"custom function option and nil option": {
			opts: []builders.ContainerOption{nil, func(c *corev1.Container) { c.WorkingDir = "/work" }},
			want: corev1.Container{Name: "app", Image: "example.com/app:1", WorkingDir: "/work", SecurityContext: restrictedContainerSC()},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := builders.Container("app", "example.com/app:1", tc.opts...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Container() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodTemplate(t *testing.T) {
	app := builders.Container("app", "example.com/app:1")
	cases := map[string]struct {
		containers []corev1.Container
		opts       []builders.PodOption
		want       corev1.PodTemplateSpec
	}{
		"defaults": {
			containers: []corev1.Container{app},
			want: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: allLabels},
				Spec: corev1.PodSpec{
					Containers:      []corev1.Container{builders.Container("app", "example.com/app:1")},
					SecurityContext: restrictedPodSC(),
				},
			},
		},
		"every option": {
			containers: []corev1.Container{app},
			opts: []builders.PodOption{
				builders.WithServiceAccount("web"),
				builders.WithRunAsUser(1000),
				builders.WithRunAsGroup(2000),
				builders.WithFSGroup(3000),
				builders.WithInitContainers(builders.Container("init", "example.com/init:1")),
				builders.WithImagePullSecrets("registry"),
				builders.WithVolumes(
					builders.ConfigMapVolume("config", "app-config"),
					builders.SecretVolume("certs", "app-tls"),
					builders.EmptyDirVolume("tmp"),
				),
				builders.WithPodAnnotation("prometheus.io/scrape", "true"),
			},
			want: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: allLabels, Annotations: map[string]string{"prometheus.io/scrape": "true"}},
				Spec: corev1.PodSpec{
					ServiceAccountName: "web",
					InitContainers:     []corev1.Container{builders.Container("init", "example.com/init:1")},
					Containers:         []corev1.Container{builders.Container("app", "example.com/app:1")},
					ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "registry"}},
					Volumes: []corev1.Volume{
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}},
						{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "app-tls"}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To[int64](1000),
						RunAsGroup:     ptr.To[int64](2000),
						FSGroup:        ptr.To[int64](3000),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
				},
			},
		},
		"security context rebuilt when removed": {
			opts: []builders.PodOption{
				func(p *corev1.PodTemplateSpec) { p.Spec.SecurityContext = nil },
				builders.WithFSGroup(1),
			},
			want: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: allLabels},
				Spec:       corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1)}},
			},
		},
		"volumes replaced by name": {
			opts: []builders.PodOption{
				builders.WithVolumes(builders.EmptyDirVolume("data")),
				builders.WithVolumes(builders.SecretVolume("data", "s")),
			},
			want: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: allLabels},
				Spec: corev1.PodSpec{
					Volumes:         []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}},
					SecurityContext: restrictedPodSC(),
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := builders.PodTemplate(testLabels, tc.containers, tc.opts...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PodTemplate() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodTemplateCopiesContainers(t *testing.T) {
	containers := []corev1.Container{builders.Container("app", "img", builders.WithEnv(builders.EnvLiteral("A", "1")))}
	pod := builders.PodTemplate(testLabels, containers)
	pod.Spec.Containers[0].Env[0].Value = "changed"
	pod.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = ptr.To(false)
	if got := containers[0].Env[0].Value; got != "1" {
		t.Errorf("caller's container env changed through the template: %q", got)
	}
	if got := *containers[0].SecurityContext.ReadOnlyRootFilesystem; !got {
		t.Errorf("caller's container security context changed through the template")
	}
}

func TestDeployment(t *testing.T) {
	pod := builders.PodTemplate(testLabels, []corev1.Container{builders.Container("app", "img")})
	wantTemplate := builders.PodTemplate(testLabels, []corev1.Container{builders.Container("app", "img")})
	meta := metav1.ObjectMeta{Name: "web", Namespace: "prod", Labels: allLabels}
	typeMeta := metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
	selector := &metav1.LabelSelector{MatchLabels: selectorLabels}

	cases := map[string]struct {
		pod  corev1.PodTemplateSpec
		opts []builders.DeploymentOption
		want *appsv1.Deployment
	}{
		"defaults leave replicas unset": {
			pod: pod,
			want: &appsv1.Deployment{TypeMeta: typeMeta, ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
				Selector: selector, Template: wantTemplate}},
		},
		"zero replicas is kept": {
			pod:  pod,
			opts: []builders.DeploymentOption{builders.WithReplicas(0)},
			want: &appsv1.Deployment{TypeMeta: typeMeta, ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](0), Selector: selector, Template: wantTemplate}},
		},
		"replicas and recreate": {
			pod:  pod,
			opts: []builders.DeploymentOption{builders.WithReplicas(3), builders.WithRecreateStrategy()},
			want: &appsv1.Deployment{TypeMeta: typeMeta, ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](3), Selector: selector, Template: wantTemplate,
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}},
		},
		"template labels always include the selector": {
			pod: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
				"extra": "yes", "app.kubernetes.io/name": "wrong"}}},
			want: &appsv1.Deployment{TypeMeta: typeMeta, ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
				Selector: selector,
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
					"extra":                       "yes",
					"app.kubernetes.io/name":      "web",
					"app.kubernetes.io/instance":  "shop",
					"app.kubernetes.io/component": "frontend",
				}}}}},
		},
		"custom option": {
			pod:  pod,
			opts: []builders.DeploymentOption{func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 5 }},
			want: &appsv1.Deployment{TypeMeta: typeMeta, ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
				MinReadySeconds: 5, Selector: selector, Template: wantTemplate}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := builders.Deployment("web", "prod", testLabels, tc.pod, tc.opts...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Deployment() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeploymentCopiesTemplate(t *testing.T) {
	pod := builders.PodTemplate(testLabels, []corev1.Container{builders.Container("app", "img")})
	d := builders.Deployment("web", "prod", testLabels, pod)
	d.Spec.Template.Labels["x"] = "y"
	d.Spec.Template.Spec.Containers[0].Image = "other"
	d.Labels["z"] = "w"
	if _, ok := pod.Labels["x"]; ok {
		t.Error("caller's template labels changed through the Deployment")
	}
	if pod.Spec.Containers[0].Image != "img" {
		t.Error("caller's container changed through the Deployment")
	}
	if _, ok := testLabels.All()["z"]; ok {
		t.Error("labels map shared between objects")
	}
}

func TestStatefulSet(t *testing.T) {
	pod := builders.PodTemplate(testLabels, []corev1.Container{builders.Container("db", "img")})
	meta := metav1.ObjectMeta{Name: "db", Namespace: "prod", Labels: allLabels}
	typeMeta := metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}
	selector := &metav1.LabelSelector{MatchLabels: selectorLabels}
	claim := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	bigClaim := *claim.DeepCopy()
	bigClaim.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("5Gi")

	cases := map[string]struct {
		opts []builders.StatefulSetOption
		want *appsv1.StatefulSet
	}{
		"defaults": {
			want: &appsv1.StatefulSet{TypeMeta: typeMeta, ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{
				Selector: selector, Template: pod}},
		},
		"every option": {
			opts: []builders.StatefulSetOption{
				builders.WithStatefulSetReplicas(0),
				builders.WithServiceName("db-headless"),
				builders.WithParallelPodManagement(),
				builders.WithVolumeClaimTemplates(builders.VolumeClaim("data", "1Gi")),
			},
			want: &appsv1.StatefulSet{TypeMeta: typeMeta, ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{
				Replicas: ptr.To[int32](0), ServiceName: "db-headless", PodManagementPolicy: appsv1.ParallelPodManagement,
				Selector: selector, Template: pod, VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim}}},
		},
		"claims replaced by name": {
			opts: []builders.StatefulSetOption{
				builders.WithVolumeClaimTemplates(builders.VolumeClaim("data", "1Gi")),
				builders.WithVolumeClaimTemplates(builders.VolumeClaim("data", "5Gi")),
			},
			want: &appsv1.StatefulSet{TypeMeta: typeMeta, ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{
				Selector: selector, Template: pod, VolumeClaimTemplates: []corev1.PersistentVolumeClaim{bigClaim}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := builders.StatefulSet("db", "prod", testLabels, pod, tc.opts...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("StatefulSet() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestService(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "web", Namespace: "prod", Labels: allLabels}
	typeMeta := metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}
	cases := map[string]struct {
		opts []builders.ServiceOption
		want *corev1.Service
	}{
		"named port targets the container port by name": {
			opts: []builders.ServiceOption{builders.WithServicePort("http", 80)},
			want: &corev1.Service{TypeMeta: typeMeta, ObjectMeta: meta, Spec: corev1.ServiceSpec{
				Selector: selectorLabels,
				Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}},
			}},
		},
		"ports replaced by name, explicit ports kept as given": {
			opts: []builders.ServiceOption{
				builders.WithServicePort("http", 80),
				builders.WithServicePort("http", 8080),
				builders.WithServicePorts(corev1.ServicePort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(5353)}),
			},
			want: &corev1.Service{TypeMeta: typeMeta, ObjectMeta: meta, Spec: corev1.ServiceSpec{
				Selector: selectorLabels,
				Ports: []corev1.ServicePort{
					{Name: "http", Port: 8080, TargetPort: intstr.FromString("http")},
					{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(5353)},
				},
			}},
		},
		"headless": {
			opts: []builders.ServiceOption{builders.WithHeadless(), builders.WithServicePort("db", 5432)},
			want: &corev1.Service{TypeMeta: typeMeta, ObjectMeta: meta, Spec: corev1.ServiceSpec{
				Selector: selectorLabels, ClusterIP: "None",
				Ports: []corev1.ServicePort{{Name: "db", Port: 5432, TargetPort: intstr.FromString("db")}},
			}},
		},
		"load balancer": {
			opts: []builders.ServiceOption{builders.WithServiceType(corev1.ServiceTypeLoadBalancer), builders.WithServicePort("https", 443)},
			want: &corev1.Service{TypeMeta: typeMeta, ObjectMeta: meta, Spec: corev1.ServiceSpec{
				Selector: selectorLabels, Type: corev1.ServiceTypeLoadBalancer,
				Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromString("https")}},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := builders.Service("web", "prod", testLabels, tc.opts...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Service() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDataObjects(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "web", Namespace: "prod", Labels: allLabels}
	cases := map[string]struct {
		got  client.Object
		want client.Object
	}{
		"configmap": {
			got: builders.ConfigMap("web", "prod", testLabels, map[string]string{"a": "1"}),
			want: &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta,
				Data: map[string]string{"a": "1"}},
		},
		"configmap without data": {
			got:  builders.ConfigMap("web", "prod", testLabels, nil),
			want: &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta},
		},
		"secret holds data, never stringData": {
			got: builders.Secret("web", "prod", testLabels, map[string]string{"password": "s3cret"}),
			want: &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta,
				Data: map[string][]byte{"password": []byte("s3cret")}},
		},
		"secret without data": {
			got:  builders.Secret("web", "prod", testLabels, nil),
			want: &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta},
		},
		"service account": {
			got:  builders.ServiceAccount("web", "prod", testLabels),
			want: &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta},
		},
		"annotated": {
			got: builders.Annotate(builders.Annotate(builders.ServiceAccount("web", "prod", testLabels),
				map[string]string{"a": "1", "b": "1"}), map[string]string{"b": "2"}),
			want: &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod", Labels: allLabels,
					Annotations: map[string]string{"a": "1", "b": "2"}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigMapCopiesData(t *testing.T) {
	data := map[string]string{"a": "1"}
	cm := builders.ConfigMap("c", "ns", testLabels, data)
	cm.Data["a"] = "2"
	if data["a"] != "1" {
		t.Error("caller's data changed through the ConfigMap")
	}
}

// serverDefaulted lists JSON field names the API server defaults on the objects built here. A
// builder that sets one would make the applier claim a field the operator never meant.
var serverDefaulted = []string{
	"terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy", "protocol",
	"restartPolicy", "dnsPolicy", "schedulerName", "terminationGracePeriodSeconds",
	"revisionHistoryLimit", "progressDeadlineSeconds", "strategy", "updateStrategy",
	"podManagementPolicy", "persistentVolumeClaimRetentionPolicy", "replicas",
	"sessionAffinity", "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy", "clusterIP",
	"periodSeconds", "timeoutSeconds", "successThreshold", "failureThreshold", "scheme",
	"defaultMode", "volumeMode", "apiVersion", "automountServiceAccountToken", "enableServiceLinks",
}

// TestNoServerDefaultedFields serialises every builder's output with its defaults, drops what the
// applier never sends (status, empty structs held by value such as strategy: {}), and checks that
// none of the fields the API server defaults is present (apiVersion is allowed only at the top).
func TestNoServerDefaultedFields(t *testing.T) {
	container := builders.Container("app", "img",
		builders.WithPort("http", 8080),
		builders.WithEnv(builders.EnvFromField("NS", "metadata.namespace")),
		builders.WithLivenessProbe(builders.HTTPProbe("/healthz", 8080)),
		builders.WithReadinessProbe(builders.TCPProbe(8080)),
		builders.WithVolumeMount("config", "/etc/app"))
	pod := builders.PodTemplate(testLabels, []corev1.Container{container},
		builders.WithVolumes(builders.ConfigMapVolume("config", "c"), builders.SecretVolume("s", "s"), builders.EmptyDirVolume("tmp")))
	cases := map[string]any{
		"deployment":      builders.Deployment("web", "ns", testLabels, pod),
		"statefulset":     builders.StatefulSet("db", "ns", testLabels, pod, builders.WithVolumeClaimTemplates(builders.VolumeClaim("data", "1Gi"))),
		"service":         builders.Service("web", "ns", testLabels, builders.WithServicePort("http", 80)),
		"configmap":       builders.ConfigMap("c", "ns", testLabels, map[string]string{"k": "v"}),
		"secret":          builders.Secret("s", "ns", testLabels, map[string]string{"k": "v"}),
		"service account": builders.ServiceAccount("sa", "ns", testLabels),
	}
	for name, obj := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			var content map[string]any
			if err := json.Unmarshal(b, &content); err != nil {
				t.Fatal(err)
			}
			delete(content, "apiVersion")
			delete(content, "status")
			content = pruneEmpty(content).(map[string]any)
			for _, path := range findKeys(content, "", serverDefaulted) {
				t.Errorf("server-defaulted field %s is set", path)
			}
			spec, _ := content["spec"].(map[string]any)
			for path, m := range map[string]map[string]any{".spec.type": spec, ".type": content} {
				if typ, ok := m["type"]; ok {
					t.Errorf("server-defaulted field %s is set to %v", path, typ)
				}
			}
		})
	}
}

// pruneEmpty drops empty maps (but keeps an empty map that is the value of a volume source such
// as emptyDir: {}, which the applier keeps because it is a pointer).
func pruneEmpty(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		if list, ok := v.([]any); ok {
			for i := range list {
				list[i] = pruneEmpty(list[i])
			}
		}
		return v
	}
	for k, child := range m {
		child = pruneEmpty(child)
		if cm, ok := child.(map[string]any); ok && len(cm) == 0 && k != "emptyDir" {
			delete(m, k)
			continue
		}
		m[k] = child
	}
	return m
}

func findKeys(v any, path string, keys []string) []string {
	var found []string
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			p := path + "." + k
			for _, bad := range keys {
				if k == bad {
					found = append(found, p)
				}
			}
			found = append(found, findKeys(child, p, keys)...)
		}
	case []any:
		for _, child := range v {
			found = append(found, findKeys(child, path+"[]", keys)...)
		}
	}
	return found
}
