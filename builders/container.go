package builders

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// ContainerOption changes a container built by Container. Any func(*corev1.Container) is one,
// so a function literal covers whatever the package has no option for.
type ContainerOption func(*corev1.Container)

// Container returns a container with the given name and image and the restricted security
// context of RestrictedContainerSecurityContext (no privilege escalation, every capability
// dropped, read-only root filesystem), then applies opts in order.
//
// Nothing the API server defaults is set: no imagePullPolicy, terminationMessagePath,
// terminationMessagePolicy or port protocol unless an option asks for it.
func Container(name, image string, opts ...ContainerOption) corev1.Container {
	c := corev1.Container{
		Name:            name,
		Image:           image,
		SecurityContext: RestrictedContainerSecurityContext(),
	}
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	return c
}

// RestrictedContainerSecurityContext returns the container part of the "restricted" Pod
// Security Standard: allowPrivilegeEscalation false, capabilities drop ALL, and a read-only
// root filesystem (not required by the standard, but a cheap and effective hardening; opt out
// with WithWritableRootFilesystem). runAsNonRoot and the seccomp profile are set for the whole
// pod by RestrictedPodSecurityContext.
func RestrictedContainerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		ReadOnlyRootFilesystem:   ptr.To(true),
	}
}

// WithWritableRootFilesystem leaves readOnlyRootFilesystem unset, for images that write outside
// their volumes. Mounting an EmptyDirVolume where the image writes (often /tmp) is usually the
// better fix. The pod still passes the restricted standard, which does not require a
// read-only root filesystem.
func WithWritableRootFilesystem() ContainerOption {
	return func(c *corev1.Container) {
		if c.SecurityContext != nil {
			c.SecurityContext.ReadOnlyRootFilesystem = nil
		}
	}
}

// WithCommand sets the container's entrypoint (the image's ENTRYPOINT is not used).
func WithCommand(command ...string) ContainerOption {
	return func(c *corev1.Container) { c.Command = slices.Clone(command) }
}

// WithArgs sets the container's arguments (the image's CMD is not used).
func WithArgs(args ...string) ContainerOption {
	return func(c *corev1.Container) { c.Args = slices.Clone(args) }
}

// WithPort declares a TCP container port. The protocol is left to the API server's default (TCP);
// a port with the same name is replaced. Name the port: WithServicePort targets it by name.
func WithPort(name string, port int32) ContainerOption {
	return WithPorts(corev1.ContainerPort{Name: name, ContainerPort: port})
}

// WithPorts declares container ports as given (e.g. with Protocol UDP), replacing any port with
// the same name, or, for unnamed ports, the same number and protocol.
func WithPorts(ports ...corev1.ContainerPort) ContainerOption {
	return func(c *corev1.Container) {
		for _, p := range ports {
			c.Ports = upsert(c.Ports, p, func(q corev1.ContainerPort) bool {
				if p.Name != "" || q.Name != "" {
					return p.Name == q.Name
				}
				return p.ContainerPort == q.ContainerPort && p.Protocol == q.Protocol
			})
		}
	}
}

// WithEnv sets environment variables, replacing a variable of the same name. Build them with
// EnvLiteral, EnvFromConfigMap, EnvFromSecret and EnvFromField.
func WithEnv(vars ...corev1.EnvVar) ContainerOption {
	return func(c *corev1.Container) {
		for _, v := range vars {
			c.Env = upsert(c.Env, v, func(w corev1.EnvVar) bool { return w.Name == v.Name })
		}
	}
}

// WithEnvFrom adds every key of ConfigMaps or Secrets as environment variables.
func WithEnvFrom(sources ...corev1.EnvFromSource) ContainerOption {
	return func(c *corev1.Container) {
		for _, src := range sources {
			c.EnvFrom = append(slices.Clip(c.EnvFrom), *src.DeepCopy())
		}
	}
}

// EnvLiteral returns an environment variable with a literal value.
func EnvLiteral(name, value string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, Value: value}
}

// EnvFromConfigMap returns an environment variable taken from key of a ConfigMap. The pod does
// not start until the ConfigMap and the key exist; its later changes reach the pod only on a
// restart (see RolloutOnChange).
func EnvFromConfigMap(name, configMap, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMap},
			Key:                  key,
		},
	}}
}

// EnvFromSecret returns an environment variable taken from key of a Secret. The pod does not
// start until the Secret and the key exist; its later changes reach the pod only on a restart
// (see RolloutOnChange).
func EnvFromSecret(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret},
			Key:                  key,
		},
	}}
}

// EnvFromField returns an environment variable taken from a field of the pod, e.g.
// "metadata.namespace" or "status.podIP" (the downward API).
func EnvFromField(name, fieldPath string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath},
	}}
}

// WithLivenessProbe sets the liveness probe (build it with TCPProbe, HTTPProbe, GRPCProbe or
// ExecProbe). The kubelet restarts the container when it fails.
func WithLivenessProbe(p *corev1.Probe) ContainerOption {
	return func(c *corev1.Container) { c.LivenessProbe = p.DeepCopy() }
}

// WithReadinessProbe sets the readiness probe. The pod receives Service traffic, and counts as
// available for a rollout, only while it succeeds.
func WithReadinessProbe(p *corev1.Probe) ContainerOption {
	return func(c *corev1.Container) { c.ReadinessProbe = p.DeepCopy() }
}

// WithStartupProbe sets the startup probe, which holds the other probes back until it succeeds.
func WithStartupProbe(p *corev1.Probe) ContainerOption {
	return func(c *corev1.Container) { c.StartupProbe = p.DeepCopy() }
}

// TCPProbe returns a probe that opens a TCP connection to port. Timing fields are left to the
// API server's defaults; set them on the returned probe when they matter.
func TCPProbe(port int32) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)},
	}}
}

// HTTPProbe returns a probe that GETs path on port and succeeds on a 2xx or 3xx answer.
func HTTPProbe(path string, port int32) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port)},
	}}
}

// GRPCProbe returns a probe that calls the standard gRPC health service on port.
func GRPCProbe(port int32) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		GRPC: &corev1.GRPCAction{Port: port},
	}}
}

// ExecProbe returns a probe that runs command in the container and succeeds on exit status 0.
func ExecProbe(command ...string) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		Exec: &corev1.ExecAction{Command: slices.Clone(command)},
	}}
}

// WithRequests sets the CPU and memory requests, e.g. WithRequests("100m", "64Mi"); an empty
// string leaves that resource unset. It is meant for literals and panics on a malformed quantity,
// like regexp.MustCompile; use WithResources for values computed at run time.
func WithRequests(cpu, memory string) ContainerOption {
	list := cpuMemory(cpu, memory)
	return func(c *corev1.Container) { c.Resources.Requests = mergedResources(c.Resources.Requests, list) }
}

// WithLimits sets the CPU and memory limits; it works like WithRequests.
func WithLimits(cpu, memory string) ContainerOption {
	list := cpuMemory(cpu, memory)
	return func(c *corev1.Container) { c.Resources.Limits = mergedResources(c.Resources.Limits, list) }
}

// WithResources sets the container's resource requirements as given.
func WithResources(r corev1.ResourceRequirements) ContainerOption {
	return func(c *corev1.Container) { c.Resources = *r.DeepCopy() }
}

// WithVolumeMount mounts the pod volume named volume at mountPath (see WithVolumes).
func WithVolumeMount(volume, mountPath string) ContainerOption {
	return withMount(corev1.VolumeMount{Name: volume, MountPath: mountPath})
}

// WithReadOnlyVolumeMount mounts the pod volume named volume read-only at mountPath.
func WithReadOnlyVolumeMount(volume, mountPath string) ContainerOption {
	return withMount(corev1.VolumeMount{Name: volume, MountPath: mountPath, ReadOnly: true})
}

func withMount(m corev1.VolumeMount) ContainerOption {
	return func(c *corev1.Container) {
		c.VolumeMounts = upsert(c.VolumeMounts, m, func(n corev1.VolumeMount) bool { return n.MountPath == m.MountPath })
	}
}

// WithImagePullPolicy sets the image pull policy. Without it the API server picks one from the
// image reference (Always for :latest or no tag, IfNotPresent otherwise).
func WithImagePullPolicy(p corev1.PullPolicy) ContainerOption {
	return func(c *corev1.Container) { c.ImagePullPolicy = p }
}

func cpuMemory(cpu, memory string) corev1.ResourceList {
	list := corev1.ResourceList{}
	if cpu != "" {
		list[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		list[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return list
}

func mergedResources(base, over corev1.ResourceList) corev1.ResourceList {
	if len(base)+len(over) == 0 {
		return nil
	}
	out := make(corev1.ResourceList, len(base)+len(over))
	for k, v := range base {
		out[k] = v.DeepCopy()
	}
	for k, v := range over {
		out[k] = v.DeepCopy()
	}
	return out
}

// upsert replaces the first element of list for which same is true with v, or appends v.
func upsert[T any](list []T, v T, same func(T) bool) []T {
	if i := slices.IndexFunc(list, same); i >= 0 {
		list = slices.Clone(list) // never write through a slice shared with another object
		list[i] = v
		return list
	}
	return append(slices.Clip(list), v)
}
