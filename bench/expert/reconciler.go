package expert

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	welcome "github.com/convergo-dev/convergo/examples/welcome/controller"
)

// ControllerName is the name the expert controller registers with the manager (the controller label
// of controller-runtime's metrics) and the value of its children's managed-by label.
const ControllerName = "welcome-expert"

// DefaultMaxConcurrentReconciles is the number of workers when Reconciler.MaxConcurrentReconciles is
// 0, as many as Convergo's Welcome operator has.
const DefaultMaxConcurrentReconciles = 4

// ConditionReady is the condition type the expert sets, as Convergo's operator does.
const ConditionReady = "Ready"

// Reasons of the Ready condition.
const (
	// ReasonAvailable: the Deployment has rolled out its current spec and every replica is available.
	ReasonAvailable = "Available"
	// ReasonProgressing: the Deployment is still rolling out.
	ReasonProgressing = "Progressing"
	// ReasonProgressDeadlineExceeded: the Deployment controller gave up waiting for the rollout.
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
)

// cacheLagRetry is how long the reconciler waits before trying again when it created a child its cache
// did not show yet and the API server answered that the child exists: the cache is behind, and its
// event usually wakes the reconciler before then.
const cacheLagRetry = time.Second

// What the children are made of, as in examples/welcome and package baseline.
const (
	pageKey       = "page.html"
	pageDir       = "/etc/welcome"
	pageVolume    = "page"
	containerName = "web"
	portName      = "http"
)

// +kubebuilder:rbac:groups=web.convergo.dev,resources=welcomes,verbs=get;list;watch
// +kubebuilder:rbac:groups=web.convergo.dev,resources=welcomes/status,verbs=patch
// +kubebuilder:rbac:groups=web.convergo.dev,resources=welcomes/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch

// Reconciler reconciles Welcome objects the way an expert writes it by hand.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server; nil means the manager's
	// client (mgr.GetClient()).
	Client client.Client
	// Scheme resolves the Welcome's kind for the children's controller references; nil means the
	// manager's scheme.
	Scheme *runtime.Scheme
	// MaxConcurrentReconciles is the number of workers; 0 means DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// ServerSideApply writes a child that needs a write with a server-side apply of the whole child
	// it owns (field manager ControllerName, forced) instead of CreateOrPatch's create or merge patch.
	// When to write is decided the same way, on the cached child; only the form of the write changes.
	// The bench measures it to tell the price of server-side apply from the rest.
	ServerSideApply bool
}

// CacheOptions sets the manager's cache options (ctrl.Options.Cache) for the expert: the objects it
// caches lose their managedFields, which the reconciler never reads. A transform already set still
// runs, after the managedFields are gone.
func CacheOptions(opts *cache.Options) {
	strip := cache.TransformStripManagedFields()
	next := opts.DefaultTransform
	if next == nil {
		opts.DefaultTransform = strip
		return
	}
	opts.DefaultTransform = func(in any) (any, error) {
		out, err := strip(in)
		if err != nil {
			return nil, err
		}
		return next(out)
	}
}

// SetupWithManager registers the reconciler under ControllerName. It watches Welcomes (only their
// spec changes: the generation; its own status patches do not wake it) and the ConfigMaps,
// Deployments and Services they control.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Scheme == nil {
		r.Scheme = mgr.GetScheme()
	}
	workers := r.MaxConcurrentReconciles
	if workers == 0 {
		workers = DefaultMaxConcurrentReconciles
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1alpha1.Welcome{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.ConfigMap{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("set up %s controller: %w", ControllerName, err)
	}
	return nil
}

// Labels returns the labels of a Welcome's children and pods, the standard ones Convergo's operator and
// the baseline set too.
func Labels(w *v1alpha1.Welcome) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":       "welcome",
		"app.kubernetes.io/instance":   w.Name,
		"app.kubernetes.io/component":  "web",
		"app.kubernetes.io/part-of":    "welcome",
		"app.kubernetes.io/managed-by": ControllerName,
	}
}

// selectorLabels returns the labels that select a Welcome's pods.
func selectorLabels(w *v1alpha1.Welcome) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":      "welcome",
		"app.kubernetes.io/instance":  w.Name,
		"app.kubernetes.io/component": "web",
	}
}

// Reconcile brings the children of one Welcome to its spec and writes its status when it changed. A
// child that needs no change costs no request; a Welcome that is gone or being deleted is left to the
// garbage collector.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := &v1alpha1.Welcome{}
	if err := r.Client.Get(ctx, req.NamespacedName, w); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil // deleted: its children go with it (owner references)
		}
		return ctrl.Result{}, fmt.Errorf("get welcome %s: %w", req.NamespacedName, err)
	}
	if !w.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	page, err := welcome.RenderPage(w.Spec) // the same page as Convergo's Welcome
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("welcome %s: %w", req.NamespacedName, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace}}
	children := []struct {
		kind   string
		obj    client.Object
		mutate func(client.Object)
	}{
		{"configmap", cm, func(o client.Object) { mutateConfigMap(o.(*corev1.ConfigMap), w, page) }},
		{"deployment", dep, func(o client.Object) { mutateDeployment(o.(*appsv1.Deployment), w) }},
		{"service", svc, func(o client.Object) { mutateService(o.(*corev1.Service), w) }},
	}
	write := r.createOrPatch
	if r.ServerSideApply {
		write = r.applyIfChanged
	}
	for _, child := range children {
		err := write(ctx, w, child.kind, child.obj, child.mutate)
		if apierrors.IsAlreadyExists(err) {
			// The cache did not show a child the API server has: it is behind. The child's event
			// normally wakes this Welcome again first; the retry covers a child nobody controls yet.
			logf.FromContext(ctx).V(1).Info("cache behind the API server, trying again", "kind", child.kind, "name", child.obj.GetName())
			return ctrl.Result{RequeueAfter: cacheLagRetry}, nil
		}
		if err != nil {
			return ctrl.Result{}, err
		}
	}

	before := w.DeepCopy()
	setStatus(w, dep, svc)
	if equality.Semantic.DeepEqual(before.Status, w.Status) {
		return ctrl.Result{}, nil
	}
	if err := r.Client.Status().Patch(ctx, w, client.MergeFrom(before)); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil // deleted meanwhile
		}
		return ctrl.Result{}, fmt.Errorf("patch status of welcome %s: %w", req.NamespacedName, err)
	}
	return ctrl.Result{}, nil
}

// createOrPatch creates child, or patches it with what mutate changed, with w as its controller.
func (r *Reconciler) createOrPatch(ctx context.Context, w *v1alpha1.Welcome, kind string, child client.Object, mutate func(client.Object)) error {
	op, err := controllerutil.CreateOrPatch(ctx, r.Client, child, func() error {
		mutate(child)
		return controllerutil.SetControllerReference(w, child, r.Scheme)
	})
	if err != nil {
		return fmt.Errorf("create or patch %s %s/%s: %w", kind, child.GetNamespace(), child.GetName(), err)
	}
	if op != controllerutil.OperationResultNone {
		logf.FromContext(ctx).V(1).Info("child written", "kind", kind, "name", child.GetName(), "operation", op)
	}
	return nil
}

// applyIfChanged decides as createOrPatch does, on the cached child: write when it is missing or when
// mutate changes it. It writes with a server-side apply of the child built from nothing by mutate,
// with w as its controller, and leaves in child what the API server returned.
func (r *Reconciler) applyIfChanged(ctx context.Context, w *v1alpha1.Welcome, kind string, child client.Object, mutate func(client.Object)) error {
	key := client.ObjectKeyFromObject(child)
	applied, err := r.apply(ctx, w, child, mutate)
	if err != nil {
		return fmt.Errorf("apply %s %s: %w", kind, key, err)
	}
	if applied {
		logf.FromContext(ctx).V(1).Info("child applied", "kind", kind, "name", key.Name)
	}
	return nil
}

// apply is applyIfChanged without the error's context; it reports whether it wrote.
func (r *Reconciler) apply(ctx context.Context, w *v1alpha1.Welcome, child client.Object, mutate func(client.Object)) (bool, error) {
	key := client.ObjectKeyFromObject(child)
	switch err := r.Client.Get(ctx, key, child); {
	case err == nil:
		before := child.DeepCopyObject()
		mutate(child)
		if err := controllerutil.SetControllerReference(w, child, r.Scheme); err != nil {
			return false, err
		}
		if equality.Semantic.DeepEqual(before, child) {
			return false, nil
		}
	case !apierrors.IsNotFound(err):
		return false, err
	}
	desired := reflect.New(reflect.TypeOf(child).Elem()).Interface().(client.Object)
	desired.SetName(key.Name)
	desired.SetNamespace(key.Namespace)
	mutate(desired)
	if err := controllerutil.SetControllerReference(w, desired, r.Scheme); err != nil {
		return false, err
	}
	gvk, err := apiutil.GVKForObject(desired, r.Scheme)
	if err != nil {
		return false, err
	}
	desired.GetObjectKind().SetGroupVersionKind(gvk)
	body, err := json.Marshal(desired)
	if err != nil {
		return false, err
	}
	if err := r.Client.Patch(ctx, desired, client.RawPatch(types.ApplyPatchType, body), client.FieldOwner(ControllerName), client.ForceOwnership); err != nil {
		return false, err
	}
	reflect.ValueOf(child).Elem().Set(reflect.ValueOf(desired).Elem())
	return true, nil
}

// mutateConfigMap sets the page ConfigMap's labels and page.
func mutateConfigMap(cm *corev1.ConfigMap, w *v1alpha1.Welcome, page string) {
	setLabels(&cm.ObjectMeta, Labels(w))
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[pageKey] = page
}

// mutateDeployment sets the fields of the Deployment that the expert owns, in place: what the API
// server defaulted (strategy, revision history, image pull policy, probe timings, the volume's default
// mode, ...) and what others added stay as they are. The content is that of the baseline's Deployment.
func mutateDeployment(dep *appsv1.Deployment, w *v1alpha1.Welcome) {
	setLabels(&dep.ObjectMeta, Labels(w))
	spec := &dep.Spec
	spec.Replicas = ptr.To(ptr.Deref(w.Spec.Replicas, 1))
	if dep.ResourceVersion == "" {
		// Being created: the selector is immutable afterwards.
		spec.Selector = &metav1.LabelSelector{MatchLabels: selectorLabels(w)}
	}
	setLabels(&spec.Template.ObjectMeta, Labels(w))

	pod := &spec.Template.Spec
	if pod.SecurityContext == nil {
		pod.SecurityContext = &corev1.PodSecurityContext{}
	}
	psc := pod.SecurityContext
	psc.RunAsNonRoot = ptr.To(true)
	psc.RunAsUser = nil
	if w.Spec.UserID != nil {
		psc.RunAsUser = ptr.To(*w.Spec.UserID)
	}
	if psc.SeccompProfile == nil {
		psc.SeccompProfile = &corev1.SeccompProfile{}
	}
	psc.SeccompProfile.Type = corev1.SeccompProfileTypeRuntimeDefault
	psc.SeccompProfile.LocalhostProfile = nil

	vol := named(&pod.Volumes, pageVolume, func(v *corev1.Volume) *string { return &v.Name })
	if vol.ConfigMap == nil {
		vol.VolumeSource = corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}
	}
	vol.ConfigMap.Name = w.Name

	c := named(&pod.Containers, containerName, func(c *corev1.Container) *string { return &c.Name })
	c.Image = w.Spec.Image
	port := named(&c.Ports, portName, func(p *corev1.ContainerPort) *string { return &p.Name })
	port.ContainerPort = w.Spec.Port

	setEnv(&c.Env, "NAME", w.Spec.Name)
	setEnv(&c.Env, "PORT", strconv.Itoa(int(w.Spec.Port)))
	setEnv(&c.Env, "PAGE_FILE", pageDir+"/"+pageKey)
	if ref := w.Spec.PasswordSecretRef; ref != nil {
		e := named(&c.Env, "PASSWORD", envName)
		e.Value = ""
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			e.ValueFrom = &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{}}
		}
		e.ValueFrom.SecretKeyRef.Name = ref.Name
		e.ValueFrom.SecretKeyRef.Key = ref.Key
	} else {
		c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "PASSWORD" })
	}

	mount := named(&c.VolumeMounts, pageVolume, func(m *corev1.VolumeMount) *string { return &m.Name })
	mount.MountPath = pageDir
	mount.ReadOnly = true

	setHTTPProbe(&c.LivenessProbe, "/healthz", w.Spec.Port)
	setHTTPProbe(&c.ReadinessProbe, "/hello/", w.Spec.Port)

	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	sc := c.SecurityContext
	sc.AllowPrivilegeEscalation = ptr.To(false)
	sc.ReadOnlyRootFilesystem = ptr.To(true)
	if sc.Capabilities == nil {
		sc.Capabilities = &corev1.Capabilities{}
	}
	sc.Capabilities.Drop = []corev1.Capability{"ALL"}
}

// mutateService sets the fields of the Service that the expert owns, in place: the cluster IPs, IP
// families, session affinity, the port's protocol and an allocated node port stay as they are. The
// content is that of the baseline's Service.
func mutateService(svc *corev1.Service, w *v1alpha1.Welcome) {
	setLabels(&svc.ObjectMeta, Labels(w))
	svc.Spec.Type = w.Spec.ServiceType
	if svc.Spec.Type == "" {
		svc.Spec.Type = corev1.ServiceTypeClusterIP // the CRD defaults it; the API server would too
	}
	svc.Spec.Selector = selectorLabels(w)
	port := named(&svc.Spec.Ports, portName, func(p *corev1.ServicePort) *string { return &p.Name })
	port.Port = w.Spec.Port
	port.TargetPort = intstr.FromString(portName)
	switch {
	case svc.Spec.Type != corev1.ServiceTypeNodePort:
		port.NodePort = 0
	case w.Spec.NodePort != nil:
		port.NodePort = *w.Spec.NodePort
	}
	// Otherwise a NodePort Service keeps the node port the API server allocated.
}

// setStatus computes w's status from its Deployment and Service as the API server returned them.
func setStatus(w *v1alpha1.Welcome, dep *appsv1.Deployment, svc *corev1.Service) {
	st := &w.Status
	st.ObservedGeneration = w.Generation
	st.ReadyReplicas = dep.Status.ReadyReplicas
	st.ServiceURL = fmt.Sprintf("http://%s.%s.svc:%d/hello/", svc.Name, svc.Namespace, w.Spec.Port)
	st.NodePort, st.NodePortURL = 0, ""
	if svc.Spec.Type == corev1.ServiceTypeNodePort {
		for _, p := range svc.Spec.Ports {
			if p.Name == portName && p.NodePort != 0 {
				st.NodePort = p.NodePort
				st.NodePortURL = fmt.Sprintf("http://<node-ip>:%d/hello/", p.NodePort)
			}
		}
	}
	done, reason, message := rolledOut(dep)
	ready := metav1.Condition{
		Type: ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: message,
		ObservedGeneration: w.Generation,
	}
	if done {
		ready.Status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&st.Conditions, ready) // keeps lastTransitionTime unless the status flips
}

// rolledOut reports whether dep has rolled out its current spec, by the rules of `kubectl rollout
// status`: its controller observed the current generation, every desired replica runs the current
// template, no old replica is left and every updated replica is available. It also gives the reason
// and message of the Ready condition.
func rolledOut(dep *appsv1.Deployment) (done bool, reason, message string) {
	st := dep.Status
	if st.ObservedGeneration < dep.Generation {
		return false, ReasonProgressing, "waiting for the deployment controller to observe the new spec"
	}
	for _, c := range st.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return false, ReasonProgressDeadlineExceeded, c.Message
		}
	}
	want := ptr.Deref(dep.Spec.Replicas, 1)
	switch {
	case st.UpdatedReplicas < want:
		return false, ReasonProgressing, fmt.Sprintf("%d/%d replicas updated", st.UpdatedReplicas, want)
	case st.Replicas > st.UpdatedReplicas:
		return false, ReasonProgressing, fmt.Sprintf("%d old replicas pending termination", st.Replicas-st.UpdatedReplicas)
	case st.AvailableReplicas < st.UpdatedReplicas:
		return false, ReasonProgressing, fmt.Sprintf("%d/%d updated replicas available", st.AvailableReplicas, st.UpdatedReplicas)
	}
	return true, ReasonAvailable, "the site is available"
}

// setLabels adds labels to m's labels, keeping the others.
func setLabels(m *metav1.ObjectMeta, labels map[string]string) {
	if m.Labels == nil {
		m.Labels = make(map[string]string, len(labels))
	}
	maps.Copy(m.Labels, labels)
}

// named returns the element of *items whose name (nameOf) is name, appending one with only that name
// when there is none. The pointer is valid until *items grows again.
func named[T any](items *[]T, name string, nameOf func(*T) *string) *T {
	for i := range *items {
		if *nameOf(&(*items)[i]) == name {
			return &(*items)[i]
		}
	}
	var item T
	*nameOf(&item) = name
	*items = append(*items, item)
	return &(*items)[len(*items)-1]
}

func envName(e *corev1.EnvVar) *string { return &e.Name }

// setEnv sets the literal environment variable name, keeping its place among the others.
func setEnv(env *[]corev1.EnvVar, name, value string) {
	e := named(env, name, envName)
	e.Value, e.ValueFrom = value, nil
}

// setHTTPProbe makes *probe an HTTP GET of path on port, keeping its timings (which the API server
// defaults) and the HTTP scheme.
func setHTTPProbe(probe **corev1.Probe, path string, port int32) {
	if *probe == nil {
		*probe = &corev1.Probe{}
	}
	h := &(*probe).ProbeHandler
	h.Exec, h.TCPSocket, h.GRPC = nil, nil, nil
	if h.HTTPGet == nil {
		h.HTTPGet = &corev1.HTTPGetAction{}
	}
	h.HTTPGet.Path = path
	h.HTTPGet.Port = intstr.FromInt32(port)
}
