package deploy

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"path/filepath"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// FieldOwner is the server-side apply field manager of everything Deploy applies.
const FieldOwner = "convergo-deploy"

// ManagedByLabel marks the objects Deploy creates besides the manifests (a sample's password Secret), so
// that Undeploy deletes those and nothing else.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// Operator is an example operator as its manifests describe it: the objects of its kustomize tree
// config/default and the facts a deploy needs from them.
type Operator struct {
	// Name is the example's name, its directory under examples/: "memcached", "welcome".
	Name string
	// Dir is the example's directory.
	Dir string
	// Objects is config/default rendered (Load), in install order.
	Objects []*unstructured.Unstructured
	// Namespace is the namespace of the operator's Deployment and ServiceAccount.
	Namespace string
	// ServiceAccount is the name of the ServiceAccount the operator's pods run as.
	ServiceAccount string
	// Deployment is the operator's Deployment.
	Deployment *appsv1.Deployment
	// CRDs are the operator's CustomResourceDefinitions.
	CRDs []*apiextensionsv1.CustomResourceDefinition
}

// LoadOperator loads the operator of the example in dir (examples/<name>) from its config/default. A
// non-empty image replaces the image of the operator's container, as `kustomize edit set image` would.
// The tree must hold exactly one Deployment, whose pods run as a ServiceAccount of the tree in the
// Deployment's namespace, and at least one CustomResourceDefinition.
func LoadOperator(dir, image string) (*Operator, error) {
	objs, err := Load(filepath.Join(dir, "config", "default"))
	if err != nil {
		return nil, err
	}
	op := &Operator{Name: filepath.Base(dir), Dir: dir, Objects: objs}
	var accounts []string
	for _, o := range objs {
		switch o.GroupVersionKind().GroupKind() {
		case appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind():
			if op.Deployment != nil {
				return nil, fmt.Errorf("%s/config/default holds Deployments %s and %s; want the operator's only", dir, op.Deployment.Name, o.GetName())
			}
			op.Deployment = &appsv1.Deployment{}
			if err := fromUnstructured(o, op.Deployment); err != nil {
				return nil, err
			}
		case crdGroupKind:
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := fromUnstructured(o, crd); err != nil {
				return nil, err
			}
			op.CRDs = append(op.CRDs, crd)
		case corev1.SchemeGroupVersion.WithKind("ServiceAccount").GroupKind():
			accounts = append(accounts, o.GetNamespace()+"/"+o.GetName())
		}
	}
	if op.Deployment == nil {
		return nil, fmt.Errorf("%s/config/default holds no Deployment: add the operator's (config/manager)", dir)
	}
	if len(op.CRDs) == 0 {
		return nil, fmt.Errorf("%s/config/default holds no CustomResourceDefinition: add config/crd to its resources", dir)
	}
	op.Namespace = op.Deployment.Namespace
	op.ServiceAccount = op.Deployment.Spec.Template.Spec.ServiceAccountName
	if op.Namespace == "" || op.ServiceAccount == "" {
		return nil, fmt.Errorf("%s: Deployment %s needs a namespace and a serviceAccountName", dir, op.Deployment.Name)
	}
	found := false
	for _, a := range accounts {
		found = found || a == op.Namespace+"/"+op.ServiceAccount
	}
	if !found {
		return nil, fmt.Errorf("%s/config/default has no ServiceAccount %s/%s, which Deployment %s runs as (it has %v)",
			dir, op.Namespace, op.ServiceAccount, op.Deployment.Name, accounts)
	}
	if image != "" {
		if len(op.Deployment.Spec.Template.Spec.Containers) != 1 {
			return nil, fmt.Errorf("%s: Deployment %s has %d containers; an image can replace only a single container's", dir, op.Deployment.Name, len(op.Deployment.Spec.Template.Spec.Containers))
		}
		for _, o := range objs {
			if o.GetKind() != "Deployment" || o.GetAPIVersion() != "apps/v1" {
				continue
			}
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			c, ok := containers[0].(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: Deployment %s: a container is not an object", dir, o.GetName())
			}
			c["image"] = image
			if err := unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers"); err != nil {
				return nil, fmt.Errorf("%s: set the image of Deployment %s: %w", dir, o.GetName(), err)
			}
		}
		op.Deployment.Spec.Template.Spec.Containers[0].Image = image
	}
	return op, nil
}

// UserName is the user name of the operator's ServiceAccount: system:serviceaccount:<namespace>:<name>.
func (op *Operator) UserName() string {
	return "system:serviceaccount:" + op.Namespace + ":" + op.ServiceAccount
}

// Impersonate returns a copy of cfg that acts as the operator's ServiceAccount (its user name and the
// groups every ServiceAccount has), so that a client or manager built from it has exactly the
// permissions the manifests grant the operator. cfg's user must be allowed to impersonate (cluster
// admins are).
func (op *Operator) Impersonate(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Impersonate = rest.ImpersonationConfig{UserName: op.UserName(), Groups: op.groups()}
	return out
}

// groups are the groups the API server gives the operator's ServiceAccount.
func (op *Operator) groups() []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + op.Namespace, "system:authenticated"}
}

// Samples returns the objects of the example's config/samples, placed in namespace.
func (op *Operator) Samples(namespace string) ([]*unstructured.Unstructured, error) {
	objs, err := Load(filepath.Join(op.Dir, "config", "samples"))
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		o.SetNamespace(namespace)
	}
	return objs, nil
}

// Prerequisites returns what samples need and do not hold: for a sample whose spec names a password
// Secret (spec.passwordSecretRef, as a Welcome does), that Secret with a random password, labelled as
// Deploy's. The password is in the Secret only; nothing prints it.
func Prerequisites(samples []*unstructured.Unstructured) ([]*corev1.Secret, error) {
	var out []*corev1.Secret
	for _, s := range samples {
		name, _, _ := unstructured.NestedString(s.Object, "spec", "passwordSecretRef", "name")
		key, _, _ := unstructured.NestedString(s.Object, "spec", "passwordSecretRef", "key")
		if name == "" {
			continue
		}
		if key == "" {
			key = "password"
		}
		password := make([]byte, 18)
		if _, err := rand.Read(password); err != nil {
			return nil, fmt.Errorf("generate a password for %s: %w", name, err)
		}
		out = append(out, &corev1.Secret{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{
				Namespace: s.GetNamespace(), Name: name,
				Labels: map[string]string{ManagedByLabel: FieldOwner},
			},
			Data: map[string][]byte{key: []byte(base64.RawURLEncoding.EncodeToString(password))},
		})
	}
	return out, nil
}

// fromUnstructured converts u into out, failing on fields out does not have.
func fromUnstructured(u *unstructured.Unstructured, out runtime.Object) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		return fmt.Errorf("%s: %w", objectID(u), err)
	}
	return nil
}
