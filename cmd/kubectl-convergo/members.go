package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/convergo-dev/convergo/reconcile/member"
)

// defaultMemberSecretsNamespace is the hub namespace whose Secrets name the member clusters, unless
// --member-secrets-namespace says otherwise.
const defaultMemberSecretsNamespace = "convergo-system"

// memberTimeout bounds each request to a member cluster when --request-timeout does not, so that a
// member that cannot be reached delays the tree by about that much, not by the system's TCP timeout.
const memberTimeout = 20 * time.Second

// memberValues are the values of --member, as given (parseMembers reads them).
type memberValues []string

// String returns the values, comma-separated.
func (v *memberValues) String() string { return strings.Join(*v, ",") }

// Set adds a value.
func (v *memberValues) Set(s string) error {
	*v = append(*v, s)
	return nil
}

// Type names the values' form in the help.
func (*memberValues) Type() string { return "NAME=KUBECONFIG_PATH" }

// parseMember parses a value of --member: NAME=KUBECONFIG_PATH.
func parseMember(v string) (name, path string, err error) {
	name, path, ok := strings.Cut(v, "=")
	name, path = strings.TrimSpace(name), strings.TrimSpace(path)
	switch {
	case !ok:
		return "", "", errors.New(`no "=": give the member's name, "=" and its kubeconfig file, such as --member eu-1=$HOME/.kube/eu-1`)
	case name == "":
		return "", "", fmt.Errorf(`no name before "=": give the member's name, the value of the label %s of its Secret (or any name)`, member.SecretLabel)
	case path == "":
		return "", "", errors.New(`no kubeconfig path after "=": give the path of a kubeconfig file that reaches the member`)
	}
	return name, path, nil
}

// parseMembers parses the values of --member into kubeconfig paths by member name.
func parseMembers(values []string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range values {
		name, path, err := parseMember(v)
		if _, dup := out[name]; err == nil && dup {
			err = fmt.Errorf("member cluster %q is already given: give each member once", name)
		}
		if err != nil {
			return nil, fmt.Errorf("--member %q: %w", v, err)
		}
		out[name] = path
	}
	return out, nil
}

// memberCluster is a member cluster the tree reads.
type memberCluster struct {
	name string
	// secret is the Secret that named it ("namespace/name"), "" for a --member flag.
	secret string
	// config reaches it; nil when err says why it cannot be made.
	config *rest.Config
	err    error
}

// memberClusters returns the member clusters to read, by name: those of the flags (kubeconfig paths
// by name), and those the Secrets labelled member.SecretLabel in the hub's namespace name (none when
// namespace is ""), except where a flag names the same member. Each request to a member times out
// after timeout, or memberTimeout when it is 0. A Secret list that fails is a warning through
// hub.warn: the members of the flags are still read.
func memberClusters(ctx context.Context, hub *cluster, namespace string, flags map[string]string, timeout time.Duration) []memberCluster {
	if timeout == 0 {
		timeout = memberTimeout
	}
	byName := map[string]memberCluster{}
	for name, path := range flags {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			err = fmt.Errorf("kubeconfig %s (--member): %w", path, err)
		}
		byName[name] = memberCluster{name: name, config: cfg, err: err}
	}
	for _, m := range memberSecrets(ctx, hub, namespace) {
		if prev, named := byName[m.name]; named {
			if prev.secret != "" { // else the flag overrides the Secret
				hub.warn("member cluster %q is named by the Secrets %s and %s: the tree reads it through %s", m.name, prev.secret, m.secret, prev.secret)
			}
			continue
		}
		byName[m.name] = m
	}
	out := make([]memberCluster, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		m := byName[name]
		if m.config != nil {
			m.config = rest.CopyConfig(m.config)
			m.config.Timeout = timeout
		}
		out = append(out, m)
	}
	return out
}

// memberSecrets reads the member clusters the Secrets in namespace labelled member.SecretLabel name,
// in the order of the Secrets' names. A Secret whose kubeconfig cannot be read is a member with an
// error; Secrets that cannot be listed are a warning through hub.warn.
func memberSecrets(ctx context.Context, hub *cluster, namespace string) []memberCluster {
	if namespace == "" {
		return nil
	}
	list, err := hub.dynamic.Resource(corev1.SchemeGroupVersion.WithResource("secrets")).Namespace(namespace).
		List(ctx, metav1.ListOptions{LabelSelector: member.SecretLabel})
	switch {
	case apierrors.IsForbidden(err):
		hub.warn("you may not list the Secrets in namespace %s that name member clusters, so their children are not shown "+
			"(--member NAME=KUBECONFIG_PATH adds a member, --member-secrets-namespace names another namespace)", namespace)
		return nil
	case err != nil:
		hub.warn("list the Secrets in namespace %s that name member clusters: %v; their children are not shown", namespace, err)
		return nil
	}
	var out []memberCluster
	for _, item := range list.Items {
		name := item.GetLabels()[member.SecretLabel]
		if name == "" {
			continue // the library too ignores a Secret without a member's name
		}
		m := memberCluster{name: name, secret: namespacedName(item.GetNamespace(), item.GetName())}
		var sec corev1.Secret
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &sec); err != nil {
			m.err = fmt.Errorf("read Secret %s: %w", m.secret, err)
		} else if raw, ok := sec.Data[member.SecretKey]; !ok {
			m.err = fmt.Errorf("read Secret %s: no %q in its data", m.secret, member.SecretKey)
		} else if m.config, err = clientcmd.RESTConfigFromKubeConfig(raw); err != nil {
			m.err = fmt.Errorf("read Secret %s: the kubeconfig under %q: %w", m.secret, member.SecretKey, err)
		}
		out = append(out, m)
	}
	return out
}

// memberChildren returns the children tracked as uid's in each member (see cluster.children), their
// Cluster set to the member's name. The members are read at once, each with its own bound on
// parallel lists. What a member leaves out, or a member that cannot be read or reached, is a
// warning through warn naming the member, given after all are read, in the order of members; only
// the context's end is an error.
func memberChildren(ctx context.Context, members []memberCluster, uid types.UID, namespace string, warn func(format string, args ...any)) ([]Child, error) {
	children := make([][]Child, len(members))
	warnings := make([][]string, len(members))
	var (
		mu      sync.Mutex // the API server's warnings come from parallel requests
		workers sync.WaitGroup
	)
	for i, m := range members {
		workers.Go(func() {
			say := func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				warnings[i] = append(warnings[i], fmt.Sprintf(format, args...))
			}
			children[i] = m.children(ctx, uid, namespace, say)
		})
	}
	workers.Wait()
	for i, m := range members {
		for _, w := range warnings[i] {
			warn("member cluster %q: %s", m.name, w)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("find children in member clusters: %w", err)
	}
	return slices.Concat(children...), nil
}

// children returns the children tracked as uid's in m, reporting through warn what it cannot read.
func (m memberCluster) children(ctx context.Context, uid types.UID, namespace string, warn func(format string, args ...any)) []Child {
	if m.err != nil {
		warn("%v; its children are not shown", m.err)
		return nil
	}
	hint := ""
	if m.secret != "" {
		hint = fmt.Sprintf(" (the kubeconfig of Secret %s may name an address only the operator reaches: --member %s=KUBECONFIG_PATH gives one of yours)", m.secret, m.name)
	}
	// A first request that only asks the version: a member that does not answer is then one warning,
	// where the cached discovery of newCluster would also log the failure through klog.
	probe, err := discovery.NewDiscoveryClientForConfig(m.config)
	if err == nil {
		_, err = probe.ServerVersionWithContext(ctx)
		if err != nil {
			err = fmt.Errorf("reach its API server: %w", err)
		}
	}
	if err != nil {
		warn("%v; its children are not shown%s", err, hint)
		return nil
	}
	c, err := newCluster(m.config, warn)
	if err != nil {
		warn("%v; its children are not shown", err)
		return nil
	}
	live, err := c.children(ctx, uid, namespace)
	if err != nil {
		warn("%v; its children are not shown%s", err, hint)
		return nil
	}
	out := make([]Child, 0, len(live))
	for _, obj := range live {
		child := childOf(obj)
		child.Cluster = m.name
		out = append(out, child)
	}
	return out
}
