package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/convergo-dev/convergo/builders"
	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/graph"
)

// Labels returns the standard labels of a Memcached's children; Labels(mc).Selector() selects its pods.
func Labels(mc *v1alpha1.Memcached) builders.Labels {
	return builders.Labels{Name: "memcached", Instance: mc.Name, Component: "cache", PartOf: "memcached", ManagedBy: Name}
}

// Children returns the children of mc: a Deployment of spec.size memcached pods and, once it is
// available, a Service in front of it (deleted first). A spec the API server accepts but that cannot
// run (a memory limit below the cache, requests above limits) is reconcile.Invalid: Stalled, not
// retried until the spec changes.
func Children(_ context.Context, mc *v1alpha1.Memcached) (*graph.Graph, error) {
	if err := validateResources(mc.Spec); err != nil {
		return nil, reconcile.Invalid("%w", err)
	}
	spec, labels := mc.Spec, Labels(mc)
	container := builders.Container("memcached", spec.Image,
		builders.WithArgs(fmt.Sprintf("--port=%d", spec.Port), fmt.Sprintf("--memory-limit=%d", spec.CacheSizeMB), fmt.Sprintf("--conn-limit=%d", spec.MaxConnections)),
		builders.WithPort("memcached", spec.Port),
		builders.WithLivenessProbe(builders.TCPProbe(spec.Port)),
		builders.WithReadinessProbe(builders.TCPProbe(spec.Port)),
		builders.WithImagePullPolicy(spec.ImagePullPolicy), // none when empty
		builders.WithResources(ptr.Deref(spec.Resources, corev1.ResourceRequirements{})),
	)
	// memcached's images run as user "memcache", 11211: the kubelet enforces runAsNonRoot only on a number.
	pod := builders.PodTemplate(labels, []corev1.Container{container}, builders.WithRunAsUser(11211))
	deployment := builders.Deployment(mc.Name, mc.Namespace, labels, pod, builders.WithReplicas(spec.Size), func(d *appsv1.Deployment) {
		if spec.MaxUnavailable != nil {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr.To(intstr.FromInt32(*spec.MaxUnavailable))}}
		}
	})

	g := graph.New()
	g.Add("deployment", deployment).ReadyWhen(builders.DeploymentAvailable)
	// DependsOn, not DependsOnForCreation: a port change reaches the Service only once the pods that
	// listen on the new port are available, so clients are never sent to a port nothing listens on.
	g.Add("service", builders.Service(mc.Name, mc.Namespace, labels, builders.WithServicePort("memcached", spec.Port))).DependsOn("deployment")
	return g, nil
}

// supportedResources are those spec.resources may name; others (hugepages...) have rules pods fail on.
var supportedResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}

// validateResources checks what the schema cannot cheaply: quantities against each other and the cache.
func validateResources(spec v1alpha1.MemcachedSpec) error {
	r := ptr.Deref(spec.Resources, corev1.ResourceRequirements{})
	var errs []error
	if len(r.Claims) > 0 {
		errs = append(errs, errors.New("spec.resources.claims is not supported: memcached pods use no dynamic resources"))
	}
	for field, items := range map[string]corev1.ResourceList{"limits": r.Limits, "requests": r.Requests} {
		for name, q := range items {
			if !slices.Contains(supportedResources, name) {
				errs = append(errs, fmt.Errorf("spec.resources.%s.%s is not supported: use cpu, memory or ephemeral-storage", field, name))
			}
			if q.Sign() < 0 {
				errs = append(errs, fmt.Errorf("spec.resources.%s.%s (%s) must not be negative", field, name, q.String()))
			}
		}
	}
	cache := resource.MustParse(strconv.Itoa(int(spec.CacheSizeMB)) + "Mi")
	if limit, ok := r.Limits[corev1.ResourceMemory]; ok && limit.Cmp(cache) < 0 {
		errs = append(errs, fmt.Errorf("spec.resources.limits.memory (%s) is smaller than spec.cacheSizeMB (%s): memcached would be killed when the cache fills", limit.String(), cache.String()))
	}
	for _, name := range supportedResources {
		limit, hasLimit := r.Limits[name]
		if request, ok := r.Requests[name]; ok && hasLimit && request.Cmp(limit) > 0 {
			errs = append(errs, fmt.Errorf("spec.resources.requests.%s (%s) exceeds spec.resources.limits.%s (%s)", name, request.String(), name, limit.String()))
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}
