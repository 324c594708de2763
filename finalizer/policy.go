package finalizer

import (
	"fmt"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// AdmissionPolicy returns a MutatingAdmissionPolicy (admissionregistration.k8s.io/v1, on by default
// since Kubernetes 1.36) under which the API server itself adds the finalizer name to every new object
// of the given resources, within the create request: the controller's Ensure then finds it there and
// sends nothing, one request less per object, and the finalizer holds the object from its first
// moment, before any controller has seen it. An object created with the finalizer keeps a single
// copy. Only creations are mutated (an object being deleted may not gain a finalizer; Ensure adds it
// back to an object someone stripped it from); a policy that fails to evaluate is ignored, and Ensure
// then adds the finalizer as without a policy.
//
// The policy acts only through a binding (AdmissionPolicyBinding). Install both with the operator,
// e.g. as YAML in its kustomization, and remove them with it: an object created while the
// controller is gone keeps its finalizer until a controller removes it, as every finalizer does.
// The policy is named "finalizer." followed by the finalizer name with "/" replaced by ".".
func AdmissionPolicy(name string, resources ...schema.GroupResource) (*admissionregistrationv1.MutatingAdmissionPolicy, error) {
	if errs := validation.IsQualifiedName(name); len(errs) > 0 {
		return nil, fmt.Errorf("finalizer %q: %s", name, strings.Join(errs, "; "))
	}
	if len(resources) == 0 {
		return nil, fmt.Errorf("admission policy for finalizer %q: name at least one resource", name)
	}
	var rules []admissionregistrationv1.NamedRuleWithOperations
	for _, gr := range resources {
		if gr.Resource == "" || strings.Contains(gr.Resource, "/") {
			return nil, fmt.Errorf("admission policy for finalizer %q: %q is not a resource (plural name, no subresource)", name, gr.String())
		}
		rules = append(rules, admissionregistrationv1.NamedRuleWithOperations{
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{gr.Group}, APIVersions: []string{"*"}, Resources: []string{gr.Resource},
				},
			},
		})
	}
	q := strconv.Quote(name) // a qualified name needs no escaping: this is also a CEL string literal
	expression := fmt.Sprintf(`!has(object.metadata.finalizers) ? [JSONPatch{op: "add", path: "/metadata/finalizers", value: [%[1]s]}] : `+
		`%[1]s in object.metadata.finalizers ? [] : [JSONPatch{op: "add", path: "/metadata/finalizers/-", value: %[1]s}]`, q)
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: "finalizer." + strings.ReplaceAll(name, "/", ".")},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints:   &admissionregistrationv1.MatchResources{ResourceRules: rules},
			FailurePolicy:      new(admissionregistrationv1.Ignore),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: expression},
			}},
		},
	}, nil
}

// AdmissionPolicyBinding returns the binding that puts policy to work, for objects in the namespaces
// namespaces selects (nil: in every namespace). It has the policy's name.
func AdmissionPolicyBinding(policy *admissionregistrationv1.MutatingAdmissionPolicy, namespaces *metav1.LabelSelector) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: policy.Name},
	}
	if namespaces != nil {
		b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: namespaces}
	}
	return b
}
