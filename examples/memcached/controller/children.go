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

	"github.com/convergo-dev/convergo/builders"
	"github.com/convergo-dev/convergo/examples/memcached/api/v1alpha1"
	"github.com/convergo-dev/convergo/reconcile"
	"github.com/convergo-dev/convergo/reconcile/graph"
)

// memcachedUID is the numeric user of the official memcached images ("memcache"). The kubelet can only
// enforce runAsNonRoot on a numeric user, so the pods name it.
const memcachedUID = 11211

// Labels returns the standard labels of a Memcached's children; Labels(mc).Selector() selects its pods.
func Labels(mc *v1alpha1.Memcached) builders.Labels {
	return builders.Labels{
		Name:      "memcached",
		Instance:  mc.Name,
		Component: "cache",
		PartOf:    "memcached",
		ManagedBy: Name,
	}
}

// Children returns the children of mc: a Deployment of spec.size memcached pods and, once the
// Deployment is available, a Service in front of it. Deletion goes the other way: the Service goes
// first, so clients stop being sent to pods that are about to disappear.
//
// A spec the API server accepts but that cannot run (a memory limit smaller than the cache, requests
// above limits) is reported with reconcile.Invalid: the Memcached becomes Stalled and nothing is
// retried until its spec changes.
func Children(_ context.Context, mc *v1alpha1.Memcached) (*graph.Graph, error) {
	if err := validateResources(mc.Spec); err != nil {
		return nil, reconcile.Invalid("%w", err)
	}
	spec := mc.Spec
	labels := Labels(mc)

	containerOpts := []builders.ContainerOption{
		builders.WithArgs(
			"--port="+strconv.Itoa(int(spec.Port)),
			"--memory-limit="+strconv.Itoa(int(spec.CacheSizeMB)),
			"--conn-limit="+strconv.Itoa(int(spec.MaxConnections)),
		),
		builders.WithPort("memcached", spec.Port),
		builders.WithLivenessProbe(builders.TCPProbe(spec.Port)),
		builders.WithReadinessProbe(builders.TCPProbe(spec.Port)),
	}
	if spec.ImagePullPolicy != "" {
		containerOpts = append(containerOpts, builders.WithImagePullPolicy(spec.ImagePullPolicy))
	}
	if spec.Resources != nil {
		containerOpts = append(containerOpts, builders.WithResources(*spec.Resources))
	}
	pod := builders.PodTemplate(labels,
		[]corev1.Container{builders.Container("memcached", spec.Image, containerOpts...)},
		builders.WithRunAsUser(memcachedUID),
	)

	deployOpts := []builders.DeploymentOption{builders.WithReplicas(spec.Size)}
	if spec.MaxUnavailable != nil {
		maxUnavailable := intstr.FromInt32(*spec.MaxUnavailable)
		deployOpts = append(deployOpts, func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &maxUnavailable},
			}
		})
	}
	deployment := builders.Deployment(mc.Name, mc.Namespace, labels, pod, deployOpts...)

	service := builders.Service(mc.Name, mc.Namespace, labels, builders.WithServicePort("memcached", spec.Port))

	g := graph.New()
	g.Add("deployment", deployment).ReadyWhen(builders.DeploymentAvailable)
	// DependsOn, not DependsOnForCreation: a port change reaches the Service only once the pods that
	// listen on the new port are available, so clients are never sent to a port nothing listens on.
	g.Add("service", service).DependsOn("deployment")
	return g, nil
}

// validateResources checks what the schema cannot express cheaply: quantities compared with each
// other and with the cache size.
// supportedResources are the resource names spec.resources may use; others (hugepages, extended
// resources) have rules of their own that pods would fail on.
var supportedResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}

func validateResources(spec v1alpha1.MemcachedSpec) error {
	if spec.Resources == nil {
		return nil
	}
	var errs []error
	limits, requests := spec.Resources.Limits, spec.Resources.Requests
	if len(spec.Resources.Claims) > 0 {
		errs = append(errs, errors.New("spec.resources.claims is not supported: memcached pods use no dynamic resources"))
	}
	for _, list := range []struct {
		field string
		items corev1.ResourceList
	}{{"limits", limits}, {"requests", requests}} {
		for name, q := range list.items {
			if !slices.Contains(supportedResources, name) {
				errs = append(errs, fmt.Errorf("spec.resources.%s.%s is not supported: use cpu, memory or ephemeral-storage", list.field, name))
			}
			if q.Sign() < 0 {
				errs = append(errs, fmt.Errorf("spec.resources.%s.%s (%s) must not be negative", list.field, name, q.String()))
			}
		}
	}
	if limit, ok := limits[corev1.ResourceMemory]; ok {
		cache := resource.MustParse(strconv.Itoa(int(spec.CacheSizeMB)) + "Mi")
		if limit.Cmp(cache) < 0 {
			errs = append(errs, fmt.Errorf("spec.resources.limits.memory (%s) is smaller than spec.cacheSizeMB (%s): memcached would be killed when the cache fills", limit.String(), cache.String()))
		}
	}
	for _, name := range supportedResources {
		limit, hasLimit := limits[name]
		request, hasRequest := requests[name]
		if hasLimit && hasRequest && request.Cmp(limit) > 0 {
			errs = append(errs, fmt.Errorf("spec.resources.requests.%s (%s) exceeds spec.resources.limits.%s (%s)", name, request.String(), name, limit.String()))
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}
