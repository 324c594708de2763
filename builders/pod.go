package builders

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodOption changes a pod template built by PodTemplate. Any func(*corev1.PodTemplateSpec) is one.
type PodOption func(*corev1.PodTemplateSpec)

// PodTemplate returns a pod template labelled with labels.All(), running containers (deep
// copies), with the restricted pod security context of RestrictedPodSecurityContext, then
// applies opts in order.
//
// Build the containers with Container so that each carries the restricted container security
// context; the pod then passes the "restricted" Pod Security Standard. Nothing the API server
// defaults is set: no restartPolicy, dnsPolicy, schedulerName, terminationGracePeriodSeconds or
// securityContext fields beyond the restricted ones.
func PodTemplate(labels Labels, containers []corev1.Container, opts ...PodOption) corev1.PodTemplateSpec {
	p := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels.All()},
		Spec: corev1.PodSpec{
			Containers:      deepCopyContainers(containers),
			SecurityContext: RestrictedPodSecurityContext(),
		},
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&p)
		}
	}
	return p
}

// RestrictedPodSecurityContext returns the pod part of the "restricted" Pod Security Standard:
// runAsNonRoot and the RuntimeDefault seccomp profile, for every container of the pod.
//
// runAsNonRoot makes the kubelet refuse to start a container whose image runs as root, or as a
// user given by name rather than number (it cannot check a name); give such images a numeric
// user with WithRunAsUser.
func RestrictedPodSecurityContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// WithRunAsUser runs the pod's containers as uid (unless a container sets its own). A uid of 0
// contradicts runAsNonRoot and fails the restricted standard.
func WithRunAsUser(uid int64) PodOption {
	return func(p *corev1.PodTemplateSpec) { podSecurityContext(p).RunAsUser = ptr.To(uid) }
}

// WithRunAsGroup runs the pod's containers with primary group gid.
func WithRunAsGroup(gid int64) PodOption {
	return func(p *corev1.PodTemplateSpec) { podSecurityContext(p).RunAsGroup = ptr.To(gid) }
}

// WithFSGroup makes the pod's volumes owned by, and writable for, group gid.
func WithFSGroup(gid int64) PodOption {
	return func(p *corev1.PodTemplateSpec) { podSecurityContext(p).FSGroup = ptr.To(gid) }
}

func podSecurityContext(p *corev1.PodTemplateSpec) *corev1.PodSecurityContext {
	if p.Spec.SecurityContext == nil {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	return p.Spec.SecurityContext
}

// WithServiceAccount runs the pod as the named ServiceAccount (see ServiceAccount). Without it
// the pod runs as the namespace's "default" ServiceAccount.
func WithServiceAccount(name string) PodOption {
	return func(p *corev1.PodTemplateSpec) { p.Spec.ServiceAccountName = name }
}

// WithInitContainers adds init containers (deep copies), which run to completion, in order,
// before the containers start. Build them with Container too.
func WithInitContainers(containers ...corev1.Container) PodOption {
	return func(p *corev1.PodTemplateSpec) {
		for _, c := range deepCopyContainers(containers) {
			p.Spec.InitContainers = upsert(p.Spec.InitContainers, c, func(d corev1.Container) bool { return d.Name == c.Name })
		}
	}
}

// WithImagePullSecrets names Secrets of type kubernetes.io/dockerconfigjson used to pull images.
func WithImagePullSecrets(names ...string) PodOption {
	return func(p *corev1.PodTemplateSpec) {
		for _, n := range names {
			ref := corev1.LocalObjectReference{Name: n}
			p.Spec.ImagePullSecrets = upsert(p.Spec.ImagePullSecrets, ref, func(r corev1.LocalObjectReference) bool { return r.Name == n })
		}
	}
}

// WithVolumes adds pod volumes, replacing a volume of the same name. Build them with
// ConfigMapVolume, SecretVolume and EmptyDirVolume, and mount them with WithVolumeMount.
func WithVolumes(volumes ...corev1.Volume) PodOption {
	return func(p *corev1.PodTemplateSpec) {
		for _, v := range volumes {
			v := *v.DeepCopy()
			p.Spec.Volumes = upsert(p.Spec.Volumes, v, func(w corev1.Volume) bool { return w.Name == v.Name })
		}
	}
}

// ConfigMapVolume returns a volume named name holding every key of the ConfigMap as a file.
// The files are updated in place when the ConfigMap changes (unless mounted with a subPath).
func ConfigMapVolume(name, configMap string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}},
	}}
}

// SecretVolume returns a volume named name holding every key of the Secret as a file.
func SecretVolume(name, secret string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: secret},
	}}
}

// EmptyDirVolume returns a scratch volume named name that lives as long as the pod. Mounted
// where an image writes (often /tmp), it lets the container keep a read-only root filesystem.
func EmptyDirVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}

// WithPodAnnotation sets an annotation on the pod template. Changing a pod template annotation
// rolls a Deployment or StatefulSet.
func WithPodAnnotation(key, value string) PodOption {
	return func(p *corev1.PodTemplateSpec) {
		p.Annotations = merged(p.Annotations, map[string]string{key: value})
	}
}

// WithRolloutOnChange puts the ConfigHash of objs on the pod template (see RolloutOnChange), so
// that a change in the data of a referenced ConfigMap or Secret rolls the workload.
func WithRolloutOnChange(objs ...client.Object) PodOption {
	return func(p *corev1.PodTemplateSpec) { RolloutOnChange(p, objs...) }
}

func deepCopyContainers(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i := range cs {
		cs[i].DeepCopyInto(&out[i])
	}
	return out
}
