// Package builders constructs the typed objects an operator owns (Deployment, StatefulSet,
// Service, ConfigMap, Secret, ServiceAccount, pod templates and containers) and checks when they
// are ready. It makes no API calls.
//
// # Set only what the operator means
//
// A constructor sets the fields its arguments and options ask for and nothing else: no
// imagePullPolicy, port protocol, terminationMessagePath, restartPolicy, dnsPolicy,
// schedulerName, strategy or revisionHistoryLimit that the API server would default anyway.
// apply.Applier sends every field that is set and its field manager then owns it, so a
// defaulted value set here would be claimed, and fought over, for nothing. Replicas is left
// unset unless WithReplicas is given (0 included), so that an autoscaler can own it. Every object
// has its TypeMeta (apiVersion and kind) set.
//
// # Labels and selectors
//
// Labels holds the standard app.kubernetes.io labels. Labels.All is put on every object and pod
// template; Labels.Selector (name, instance and component, never the version) selects the pods,
// so it never changes across versions: a Deployment's selector is immutable.
//
// # Secure by default
//
// Container sets RestrictedContainerSecurityContext and PodTemplate sets
// RestrictedPodSecurityContext, so pods built from both pass the "restricted" Pod Security
// Standard: runAsNonRoot, seccomp profile RuntimeDefault, allowPrivilegeEscalation false,
// capabilities drop ALL, plus a read-only root filesystem (opt out with
// WithWritableRootFilesystem, or better mount an EmptyDirVolume where the image writes). Images
// whose USER is root or a name rather than a number need WithRunAsUser.
//
// # Options
//
// Every option in this package is a function that changes the object being built, applied in
// order after the constructor's defaults: ContainerOption is func(*corev1.Container),
// PodOption is func(*corev1.PodTemplateSpec), DeploymentOption is func(*appsv1.Deployment),
// StatefulSetOption is func(*appsv1.StatefulSet) and ServiceOption is func(*corev1.Service).
// With... functions return them. Whatever the package has no option for is a function literal
// away, with the full typed object in hand:
//
//	builders.Deployment(name, ns, labels, pod, func(d *appsv1.Deployment) {
//		d.Spec.MinReadySeconds = 10
//	})
//
// ConfigMap, Secret and ServiceAccount take no options: set fields on the returned object.
// Annotate adds annotations to any of them.
//
// # Rolling on configuration changes
//
// A pod reads environment variables from ConfigMaps and Secrets only when it starts.
// RolloutOnChange (or the PodOption WithRolloutOnChange) puts ConfigHash of those objects on the
// pod template, so a change of their data changes the template and rolls the workload.
//
// # Readiness checks
//
// DeploymentAvailable, StatefulSetReady, ServiceReady, JobComplete and ConditionsReady have the
// shape of graph.ReadyCheck, func(live client.Object) (ready bool, reason string), and
// accept typed and unstructured objects. reason says what is missing while not ready.
//
// # Usage
//
//	labels := builders.Labels{Name: "memcached", Instance: mc.Name, Component: "cache",
//		PartOf: "memcached", ManagedBy: "memcached-operator", Version: "1.6.38"}
//	pod := builders.PodTemplate(labels, []corev1.Container{
//		builders.Container("memcached", "memcached:1.6.38",
//			builders.WithPort("memcached", 11211),
//			builders.WithReadinessProbe(builders.TCPProbe(11211)),
//			builders.WithRequests("100m", "64Mi")),
//	}, builders.WithRunAsUser(11211))
//	deploy := builders.Deployment(mc.Name, mc.Namespace, labels, pod, builders.WithReplicas(mc.Spec.Size))
//	svc := builders.Service(mc.Name, mc.Namespace, labels, builders.WithServicePort("memcached", 11211))
//
//	graph.Add("deployment", deploy).ReadyWhen(builders.DeploymentAvailable)
//	graph.Add("service", svc) // needs no running pods: applied beside the deployment
package builders
