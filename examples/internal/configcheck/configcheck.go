package configcheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// kustomization is the part of a kustomization.yaml the check reads.
type kustomization struct {
	Resources []string `json:"resources"`
	Images    []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// check checks the kustomize tree in dir (an example's config directory) of the operator named example.
func check(t *testing.T, dir, example string) {
	t.Helper()
	objs := map[string][]*unstructured.Unstructured{} // by kind
	for _, sub := range []string{"default", "crd", "rbac", "manager", "samples"} {
		k := readKustomization(t, filepath.Join(dir, sub))
		if len(k.Resources) == 0 {
			t.Errorf("%s/kustomization.yaml lists no resources", sub)
		}
		for _, r := range k.Resources {
			path := filepath.Join(dir, sub, r)
			info, err := os.Stat(path)
			if err != nil {
				t.Errorf("%s/kustomization.yaml: %v", sub, err)
				continue
			}
			if info.IsDir() {
				readKustomization(t, path)
				continue
			}
			for _, o := range readObjects(t, path) {
				objs[o.GetKind()] = append(objs[o.GetKind()], o)
			}
		}
		if sub == "manager" {
			checkImages(t, k)
		}
	}

	if len(objs["CustomResourceDefinition"]) == 0 {
		t.Error("config/crd lists no CustomResourceDefinition")
	}
	for _, o := range objs["CustomResourceDefinition"] {
		var crd apiextensionsv1.CustomResourceDefinition
		convert(t, o, &crd)
	}

	sa := only[corev1.ServiceAccount](t, objs, "ServiceAccount")
	deploy := only[appsv1.Deployment](t, objs, "Deployment")
	if sa == nil || deploy == nil {
		return
	}
	checkManager(t, deploy.Namespace, deploy.Spec.Template.Spec, sa)
	if _, err := os.Stat(filepath.Join(dir, "sharded")); err == nil {
		checkSharded(t, filepath.Join(dir, "sharded"), sa)
	}
	if _, err := os.Stat(filepath.Join(dir, "webhook")); err == nil {
		checkWebhooks(t, filepath.Join(dir, "webhook"), deploy)
	}

	roleName := example + "-manager-role"
	var clusterRoles []string
	for _, o := range objs["ClusterRole"] {
		clusterRoles = append(clusterRoles, o.GetName())
	}
	bound := map[string]bool{}
	for _, o := range objs["ClusterRoleBinding"] {
		var b rbacv1.ClusterRoleBinding
		convert(t, o, &b)
		if !boundTo(b.Subjects, sa) {
			t.Errorf("ClusterRoleBinding %s does not bind ServiceAccount %s/%s", b.Name, sa.Namespace, sa.Name)
		}
		bound[b.RoleRef.Name] = true
	}
	for _, o := range objs["RoleBinding"] {
		var b rbacv1.RoleBinding
		convert(t, o, &b)
		if !boundTo(b.Subjects, sa) {
			t.Errorf("RoleBinding %s does not bind ServiceAccount %s/%s", b.Name, sa.Namespace, sa.Name)
		}
		bound[b.RoleRef.Name] = true
	}
	if !bound[roleName] {
		t.Errorf("no binding of the generated ClusterRole %s (bound: %v)", roleName, bound)
	}
	found := false
	for _, name := range clusterRoles {
		found = found || name == roleName
	}
	if !found {
		t.Errorf("config/rbac has no ClusterRole %s (the generated role.yaml); ClusterRoles: %v", roleName, clusterRoles)
	}
}

// checkSharded checks the sharded variant: the manager as a StatefulSet whose governing Service exists,
// every replica active (no leader election) with --shard-ring, its member and Lease namespace from
// the pod's name and namespace, and the same pod as the default variant's.
func checkSharded(t *testing.T, dir string, sa *corev1.ServiceAccount) {
	t.Helper()
	k := readKustomization(t, dir)
	checkImages(t, k)
	objs := map[string][]*unstructured.Unstructured{}
	for _, r := range k.Resources {
		path := filepath.Join(dir, r)
		if info, err := os.Stat(path); err != nil {
			t.Errorf("sharded/kustomization.yaml: %v", err)
			continue
		} else if info.IsDir() {
			continue
		}
		for _, o := range readObjects(t, path) {
			objs[o.GetKind()] = append(objs[o.GetKind()], o)
		}
	}
	set := only[appsv1.StatefulSet](t, objs, "StatefulSet")
	svc := only[corev1.Service](t, objs, "Service")
	if set == nil || svc == nil {
		return
	}
	if set.Spec.ServiceName != svc.Name || svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("StatefulSet's serviceName %q: want the headless Service %s", set.Spec.ServiceName, svc.Name)
	}
	pod := set.Spec.Template.Spec
	checkManager(t, set.Namespace, pod, sa)
	if len(pod.Containers) != 1 {
		return
	}
	args := strings.Join(pod.Containers[0].Args, " ")
	if !strings.Contains(args, "--shard-ring=") || strings.Contains(args, "--leader-elect") {
		t.Errorf("sharded manager args %q: want --shard-ring and no leader election", args)
	}
	env := map[string]string{}
	for _, e := range pod.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			env[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if env["POD_NAME"] != "metadata.name" || env["POD_NAMESPACE"] != "metadata.namespace" {
		t.Errorf("sharded manager env %v: want POD_NAME and POD_NAMESPACE from the pod's metadata", env)
	}
}

// checkManager checks the operator's pod, in namespace.
func checkManager(t *testing.T, namespace string, pod corev1.PodSpec, sa *corev1.ServiceAccount) {
	t.Helper()
	if pod.ServiceAccountName != sa.Name || namespace != sa.Namespace {
		t.Errorf("manager runs as ServiceAccount %s/%s, want %s/%s", namespace, pod.ServiceAccountName, sa.Namespace, sa.Name)
	}
	if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("manager pod security context %+v: want runAsNonRoot and the RuntimeDefault seccomp profile", psc)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("manager has %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Error("manager container has no security context")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("manager container allows privilege escalation")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("manager container has a writable root file system")
	case sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0:
		t.Errorf("manager container capabilities %+v: want drop ALL and nothing added", sc.Capabilities)
	}
	if c.LivenessProbe == nil || c.ReadinessProbe == nil {
		t.Error("manager container needs liveness and readiness probes")
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("manager container requests %v: want cpu and memory", c.Resources.Requests)
	}
	if c.Resources.Limits.Memory().IsZero() {
		t.Error("manager container has no memory limit")
	}
	if c.Image != "controller:latest" {
		t.Errorf("manager image %q: want controller:latest, replaced by the kustomization's images", c.Image)
	}
}

func checkImages(t *testing.T, k kustomization) {
	t.Helper()
	if len(k.Images) != 1 || k.Images[0].Name != "controller" || k.Images[0].NewName == "" || k.Images[0].NewTag == "" {
		t.Errorf("manager/kustomization.yaml images %+v: want one replacement of controller with a name and a tag", k.Images)
	}
}

func boundTo(subjects []rbacv1.Subject, sa *corev1.ServiceAccount) bool {
	for _, s := range subjects {
		if s.Kind == rbacv1.ServiceAccountKind && s.Name == sa.Name && s.Namespace == sa.Namespace {
			return true
		}
	}
	return false
}

// only returns the single object of kind, converted to T.
func only[T any](t *testing.T, objs map[string][]*unstructured.Unstructured, kind string) *T {
	t.Helper()
	if n := len(objs[kind]); n != 1 {
		t.Errorf("config holds %d %s objects, want 1", n, kind)
		return nil
	}
	out := new(T)
	convert(t, objs[kind][0], out)
	return out
}

// convert decodes u into out strictly: unknown fields are errors.
func convert(t *testing.T, u *unstructured.Unstructured, out any) {
	t.Helper()
	b, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, out); err != nil {
		t.Errorf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

func readKustomization(t *testing.T, dir string) kustomization {
	t.Helper()
	var k kustomization
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Errorf("read kustomization: %v", err)
		return k
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Errorf("%s/kustomization.yaml: %v", dir, err)
	}
	return k
}

// readObjects parses a multi-document YAML file; every document must have apiVersion, kind and a name.
func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("read %s: %v", path, err)
		return nil
	}
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return out
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var u unstructured.Unstructured
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if u.Object == nil {
			continue
		}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			t.Errorf("%s: document without apiVersion, kind or name: %v", path, fmt.Sprint(u.Object))
			continue
		}
		out = append(out, &u)
	}
	return out
}

// checkWebhooks checks a config/webhook tree: every webhook of its configurations is called through a
// Service of the tree, on a port that forwards to the manager's pods, which the Service selects.
func checkWebhooks(t *testing.T, dir string, deploy *appsv1.Deployment) {
	t.Helper()
	objs := map[string][]*unstructured.Unstructured{}
	for _, r := range readKustomization(t, dir).Resources {
		for _, o := range readObjects(t, filepath.Join(dir, r)) {
			objs[o.GetKind()] = append(objs[o.GetKind()], o)
		}
	}
	services := map[string]*corev1.Service{}
	for _, o := range objs["Service"] {
		var svc corev1.Service
		convert(t, o, &svc)
		services[svc.Namespace+"/"+svc.Name] = &svc
		if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(deploy.Spec.Template.Labels)) || len(svc.Spec.Selector) == 0 {
			t.Errorf("webhook Service %s selects %v, not the manager's pods (labels %v)", svc.Name, svc.Spec.Selector, deploy.Spec.Template.Labels)
		}
	}
	var clientConfigs []admissionregistrationv1.WebhookClientConfig
	for _, o := range objs["MutatingWebhookConfiguration"] {
		var c admissionregistrationv1.MutatingWebhookConfiguration
		convert(t, o, &c)
		for _, w := range c.Webhooks {
			clientConfigs = append(clientConfigs, w.ClientConfig)
		}
	}
	for _, o := range objs["ValidatingWebhookConfiguration"] {
		var c admissionregistrationv1.ValidatingWebhookConfiguration
		convert(t, o, &c)
		for _, w := range c.Webhooks {
			clientConfigs = append(clientConfigs, w.ClientConfig)
		}
	}
	if len(clientConfigs) == 0 {
		t.Error("config/webhook holds no webhook configuration")
	}
	for _, cc := range clientConfigs {
		if cc.Service == nil || cc.Service.Path == nil {
			t.Errorf("webhook client config %+v: want a Service and a path", cc)
			continue
		}
		svc := services[cc.Service.Namespace+"/"+cc.Service.Name]
		if svc == nil {
			t.Errorf("webhook calls Service %s/%s, which config/webhook does not hold", cc.Service.Namespace, cc.Service.Name)
			continue
		}
		port := int32(443)
		if cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		found := false
		for _, p := range svc.Spec.Ports {
			found = found || p.Port == port
		}
		if !found {
			t.Errorf("webhook calls Service %s on port %d, which it does not expose (%v)", svc.Name, port, svc.Spec.Ports)
		}
	}
}
