package localweb

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ContainerName is the name of the web server's container in the Deployment the Welcome operator renders.
const ContainerName = "web"

// Config is the configuration of one container of a Deployment, resolved from the live objects.
type Config struct {
	// Deployment is the namespace and name of the Deployment.
	Deployment types.NamespacedName
	// Container is the container's name.
	Container string
	// Args are the container's arguments, passed to the web server.
	Args []string
	// Env is the container's environment, in the order the kubelet sets it (envFrom, then env, a later
	// definition of a name replacing an earlier one), every reference resolved.
	Env []EnvVar
	// Mounts are the container's volume mounts with the files each volume shows.
	Mounts []Mount
	// ReadinessPath is the path of the container's HTTP readiness probe ("/" when it has none): the page
	// that must answer before the server counts as started.
	ReadinessPath string
}

// EnvVar is one environment variable of a container with its value.
type EnvVar struct {
	// Name is the variable's name.
	Name string
	// Value is its value.
	Value string
	// From says where the value comes from: empty for a literal, else for instance
	// "Secret/alice-password key password".
	From string
	// Secret is true when the value comes from a Secret: it is never shown.
	Secret bool
}

// Mount is one volume mount of a container with the files its volume shows.
type Mount struct {
	// Path is the mount path in the container.
	Path string
	// Volume is the volume's name.
	Volume string
	// From says what the volume is: "ConfigMap/alice", "Secret/tls", "emptyDir".
	From string
	// Files maps each file's path relative to the mount path to its content.
	Files map[string][]byte
	// Mode is the permission bits of each file (the volume's defaultMode or the item's mode).
	Mode map[string]int32
}

// Lookup returns the value of the environment variable name and whether the container sets it.
func (c *Config) Lookup(name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// Resolve reads the configuration of the container named container in the live Deployment dep: its
// arguments, its environment with every Secret and ConfigMap reference resolved through r, and the files
// of its volumes. A reference the kubelet would refuse (a missing object or key that is not optional) is
// an error, as is anything the local process could not reproduce faithfully.
func Resolve(ctx context.Context, r client.Reader, dep *appsv1.Deployment, container string) (*Config, error) {
	key := client.ObjectKeyFromObject(dep)
	pod := &dep.Spec.Template.Spec
	i := slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == container })
	if i < 0 {
		return nil, fmt.Errorf("deployment %s has no container %q: resolve the Welcome operator's Deployment", key, container)
	}
	c := &pod.Containers[i]
	if len(c.Command) > 0 {
		return nil, fmt.Errorf("container %q of deployment %s sets a command (%q): only the image's entry point, the web server, runs locally", container, key, c.Command)
	}
	if c.WorkingDir != "" {
		return nil, fmt.Errorf("container %q of deployment %s sets workingDir %q, which has no local stand-in", container, key, c.WorkingDir)
	}
	res := &resolver{ctx: ctx, r: r, ns: dep.Namespace, where: fmt.Sprintf("container %q of deployment %s", container, key)}
	cfg := &Config{Deployment: key, Container: container, ReadinessPath: "/"}
	if p := c.ReadinessProbe; p != nil && p.HTTPGet != nil && p.HTTPGet.Path != "" {
		cfg.ReadinessPath = p.HTTPGet.Path
	}
	for _, a := range c.Args {
		v, err := unescape(a)
		if err != nil {
			return nil, fmt.Errorf("%s: argument %q: %w", res.where, a, err)
		}
		cfg.Args = append(cfg.Args, v)
	}
	for _, src := range c.EnvFrom {
		vars, err := res.envFrom(src)
		if err != nil {
			return nil, err
		}
		for _, v := range vars {
			cfg.Env = setEnv(cfg.Env, v)
		}
	}
	for _, e := range c.Env {
		v, ok, err := res.env(e)
		if err != nil {
			return nil, err
		}
		if ok {
			cfg.Env = setEnv(cfg.Env, v)
		}
	}
	for _, m := range c.VolumeMounts {
		mount, err := res.mount(pod.Volumes, m)
		if err != nil {
			return nil, err
		}
		cfg.Mounts = append(cfg.Mounts, mount)
	}
	return cfg, nil
}

// setEnv sets v in env: a name defined again replaces the earlier value, as in a container.
func setEnv(env []EnvVar, v EnvVar) []EnvVar {
	if i := slices.IndexFunc(env, func(e EnvVar) bool { return e.Name == v.Name }); i >= 0 {
		env[i] = v
		return env
	}
	return append(env, v)
}

// unescape returns the value the kubelet passes for v, an argument or a literal environment value: "$$"
// becomes "$". A $(VAR) reference is an error: the local process does not reproduce the expansion.
func unescape(v string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '$' && i+1 < len(v) {
			switch v[i+1] {
			case '$':
				b.WriteByte('$')
				i++
				continue
			case '(':
				return "", fmt.Errorf("uses $(VAR) expansion, which the local process does not reproduce")
			}
		}
		b.WriteByte(v[i])
	}
	return b.String(), nil
}

// resolver reads the objects a container refers to.
type resolver struct {
	ctx   context.Context
	r     client.Reader
	ns    string
	where string // the container, for messages
}

// data returns the data of the named Secret (secret true) or ConfigMap, or nil when it does not exist
// and optional is set.
func (res *resolver) data(secret bool, name string, optional *bool) (map[string][]byte, string, error) {
	var obj client.Object = &corev1.ConfigMap{}
	kind := "ConfigMap"
	if secret {
		obj, kind = &corev1.Secret{}, "Secret"
	}
	from := kind + "/" + name
	err := res.r.Get(res.ctx, types.NamespacedName{Namespace: res.ns, Name: name}, obj)
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil, from, nil
	}
	if err != nil {
		return nil, from, fmt.Errorf("%s refers to %s: %w", res.where, from, err)
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		return o.Data, from, nil
	case *corev1.ConfigMap:
		out := make(map[string][]byte, len(o.Data)+len(o.BinaryData))
		for k, v := range o.Data {
			out[k] = []byte(v)
		}
		maps.Copy(out, o.BinaryData)
		return out, from, nil
	}
	return nil, from, nil
}

// env resolves one env entry; ok is false when an optional reference resolves to nothing.
func (res *resolver) env(e corev1.EnvVar) (v EnvVar, ok bool, err error) {
	if e.ValueFrom == nil {
		val, err := unescape(e.Value)
		if err != nil {
			return EnvVar{}, false, fmt.Errorf("%s: env %s: %w", res.where, e.Name, err)
		}
		return EnvVar{Name: e.Name, Value: val}, true, nil
	}
	var (
		secret    bool
		name, key string
		optional  *bool
	)
	switch ref := e.ValueFrom; {
	case ref.SecretKeyRef != nil:
		secret, name, key, optional = true, ref.SecretKeyRef.Name, ref.SecretKeyRef.Key, ref.SecretKeyRef.Optional
	case ref.ConfigMapKeyRef != nil:
		name, key, optional = ref.ConfigMapKeyRef.Name, ref.ConfigMapKeyRef.Key, ref.ConfigMapKeyRef.Optional
	default:
		return EnvVar{}, false, fmt.Errorf("%s: env %s comes from the downward API or a file, which the local process does not reproduce", res.where, e.Name)
	}
	data, from, err := res.data(secret, name, optional)
	if err != nil {
		return EnvVar{}, false, fmt.Errorf("env %s: %w", e.Name, err)
	}
	val, found := data[key]
	if !found {
		if optional != nil && *optional {
			return EnvVar{}, false, nil
		}
		return EnvVar{}, false, fmt.Errorf("%s: env %s: %s has no key %q (the kubelet would not start the container)", res.where, e.Name, from, key)
	}
	return EnvVar{Name: e.Name, Value: string(val), From: from + " key " + key, Secret: secret}, true, nil
}

// envFrom resolves one envFrom entry: every key of the object, prefixed, in key order.
func (res *resolver) envFrom(src corev1.EnvFromSource) ([]EnvVar, error) {
	var (
		secret   bool
		name     string
		optional *bool
	)
	switch {
	case src.SecretRef != nil:
		secret, name, optional = true, src.SecretRef.Name, src.SecretRef.Optional
	case src.ConfigMapRef != nil:
		name, optional = src.ConfigMapRef.Name, src.ConfigMapRef.Optional
	default:
		return nil, fmt.Errorf("%s: an envFrom entry names neither a Secret nor a ConfigMap", res.where)
	}
	data, from, err := res.data(secret, name, optional)
	if err != nil {
		return nil, fmt.Errorf("envFrom: %w", err)
	}
	var out []EnvVar
	for _, k := range slices.Sorted(maps.Keys(data)) {
		out = append(out, EnvVar{Name: src.Prefix + k, Value: string(data[k]), From: from + " key " + k, Secret: secret})
	}
	return out, nil
}

// mount resolves one volume mount to the files its volume shows.
func (res *resolver) mount(volumes []corev1.Volume, m corev1.VolumeMount) (Mount, error) {
	where := fmt.Sprintf("%s: volume mount %q at %s", res.where, m.Name, m.MountPath)
	if m.SubPath != "" || m.SubPathExpr != "" {
		return Mount{}, fmt.Errorf("%s: sub-path mounts have no local stand-in", where)
	}
	if !path.IsAbs(m.MountPath) {
		return Mount{}, fmt.Errorf("%s: the mount path is not absolute", where)
	}
	i := slices.IndexFunc(volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
	if i < 0 {
		return Mount{}, fmt.Errorf("%s: the pod has no such volume", where)
	}
	v := volumes[i]
	out := Mount{Path: path.Clean(m.MountPath), Volume: v.Name, Files: map[string][]byte{}, Mode: map[string]int32{}}
	var (
		secret      bool
		name        string
		items       []corev1.KeyToPath
		defaultMode *int32
		optional    *bool
	)
	switch {
	case v.EmptyDir != nil:
		out.From = "emptyDir"
		return out, nil
	case v.ConfigMap != nil:
		name, items, defaultMode, optional = v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.DefaultMode, v.ConfigMap.Optional
	case v.Secret != nil:
		secret, name, items, defaultMode, optional = true, v.Secret.SecretName, v.Secret.Items, v.Secret.DefaultMode, v.Secret.Optional
	default:
		return Mount{}, fmt.Errorf("%s: only ConfigMap, Secret and emptyDir volumes have a local stand-in", where)
	}
	data, from, err := res.data(secret, name, optional)
	if err != nil {
		return Mount{}, fmt.Errorf("volume %s: %w", v.Name, err)
	}
	out.From = from
	mode := int32(0o644) // the kubelet's default for ConfigMap and Secret volumes
	if defaultMode != nil {
		mode = *defaultMode
	}
	if len(items) == 0 {
		for k, val := range data {
			out.Files[k], out.Mode[k] = val, mode
		}
		return out, nil
	}
	for _, it := range items {
		val, found := data[it.Key]
		if !found {
			if optional != nil && *optional {
				continue
			}
			return Mount{}, fmt.Errorf("%s: %s has no key %q", where, from, it.Key)
		}
		if !isLocal(it.Path) {
			return Mount{}, fmt.Errorf("%s: item path %q leaves the mount", where, it.Path)
		}
		m := mode
		if it.Mode != nil {
			m = *it.Mode
		}
		out.Files[it.Path], out.Mode[it.Path] = val, m
	}
	return out, nil
}

// isLocal reports whether p is a relative slash-separated path that stays below its directory.
func isLocal(p string) bool {
	return p != "" && !path.IsAbs(p) && path.Clean(p) != ".." && !strings.HasPrefix(path.Clean(p), "../")
}
