package cluster

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The annotation kwok selects the nodes it manages by (--manage-nodes-with-annotation-selector).
const (
	nodeAnnotation      = "kwok.x-k8s.io/node"
	nodeAnnotationValue = "fake"
)

// NodeLabel and NodeLabelValue mark the fake nodes ("type: kwok"), e.g. for node selectors.
const (
	NodeLabel      = "type"
	NodeLabelValue = "kwok"
)

// nodeName returns the name of fake node i.
func nodeName(i int) string { return fmt.Sprintf("kwok-node-%d", i) }

// newNode returns fake node name: managed by kwok, schedulable, with room for 110 pods.
func newNode(name string) *corev1.Node {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{nodeAnnotation: nodeAnnotationValue},
			Labels: map[string]string{
				NodeLabel:                NodeLabelValue,
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
		},
		Status: corev1.NodeStatus{
			Capacity:    resources,
			Allocatable: resources.DeepCopy(),
		},
	}
}

// createNodes creates n fake nodes and returns their names.
func createNodes(ctx context.Context, cs kubernetes.Interface, n int) ([]string, error) {
	names := make([]string, 0, n)
	for i := range n {
		node := newNode(nodeName(i))
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("create node %s: %w", node.Name, err)
		}
		names = append(names, node.Name)
	}
	return names, nil
}

// nodesReady checks that every named node is Ready and carries no node.kubernetes.io taint (the
// node lifecycle controller taints new nodes not-ready until their Ready condition is seen).
func nodesReady(cs kubernetes.Interface, names []string) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, name := range names {
			node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("get node %s: %w", name, err)
			}
			if !isNodeReady(node) {
				return fmt.Errorf("node %s is not Ready (conditions: %s)", name, describeConditions(node.Status.Conditions))
			}
			for _, taint := range node.Spec.Taints {
				if strings.HasPrefix(taint.Key, "node.kubernetes.io/") {
					return fmt.Errorf("node %s still has taint %s:%s", name, taint.Key, taint.Effect)
				}
			}
		}
		return nil
	}
}

func isNodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func describeConditions(conds []corev1.NodeCondition) string {
	if len(conds) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(conds))
	for _, c := range conds {
		parts = append(parts, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	return strings.Join(parts, ", ")
}

// defaultServiceAccount checks that the ServiceAccount "default" exists in "default": the
// serviceaccount controller of the controller-manager creates it, so it shows the controllers run.
func defaultServiceAccount(cs kubernetes.Interface) func(context.Context) error {
	return func(ctx context.Context) error {
		if _, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return fmt.Errorf("get serviceaccount default/default: %w", err)
		}
		return nil
	}
}
