package baseline

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	welcome "github.com/convergo-dev/convergo/examples/welcome/controller"
)

// ControllerName is the name the baseline controller registers with the manager (and the value of the
// controller label of controller-runtime's metrics).
const ControllerName = "welcome-baseline"

// ConditionReady is the condition type the baseline sets, as Convergo's operator does.
const ConditionReady = "Ready"

// Where the page is mounted in the web server, as in examples/welcome.
const (
	pageKey = "page.html"
	pageDir = "/etc/welcome"
)

// Reconciler reconciles Welcome objects the tutorial way. Client is the manager's client (reads from
// its cache); Scheme resolves the owner's kind for controller references.
type Reconciler struct {
	client.Client
	Scheme *runtime.Scheme
	// MaxConcurrentReconciles is the number of workers; 0 keeps controller-runtime's default, 1, as
	// tutorials do.
	MaxConcurrentReconciles int
}

// SetupWithManager registers the reconciler under ControllerName, watching Welcomes and the
// ConfigMaps, Deployments and Services they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1alpha1.Welcome{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r)
}

// Labels returns the labels of a Welcome's children and pods, the standard ones Convergo's operator
// sets too.
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

// Reconcile creates or updates the children of one Welcome and writes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)

	var w v1alpha1.Welcome
	if err := r.Get(ctx, req.NamespacedName, &w); err != nil {
		// Deleted: the garbage collector removes the children through their owner references.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	page, err := welcome.RenderPage(w.Spec) // the same page as Convergo's Welcome
	if err != nil {
		return ctrl.Result{}, err
	}
	created := false

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		cm.Labels = Labels(&w)
		cm.Data = map[string]string{pageKey: page}
		return controllerutil.SetControllerReference(&w, cm, r.Scheme)
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("create or update configmap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	created = created || op == controllerutil.OperationResultCreated
	log.V(1).Info("configmap reconciled", "operation", op)

	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace}}
	op, err = controllerutil.CreateOrUpdate(ctx, r.Client, dep, func() error {
		dep.Labels = Labels(&w)
		dep.Spec = deploymentSpec(&w)
		return controllerutil.SetControllerReference(&w, dep, r.Scheme)
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("create or update deployment %s/%s: %w", dep.Namespace, dep.Name, err)
	}
	created = created || op == controllerutil.OperationResultCreated
	log.V(1).Info("deployment reconciled", "operation", op)

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace}}
	op, err = controllerutil.CreateOrUpdate(ctx, r.Client, svc, func() error {
		svc.Labels = Labels(&w)
		svc.Spec = serviceSpec(&w)
		return controllerutil.SetControllerReference(&w, svc, r.Scheme)
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("create or update service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	created = created || op == controllerutil.OperationResultCreated
	log.V(1).Info("service reconciled", "operation", op)

	replicas := ptr.Deref(w.Spec.Replicas, 1)
	w.Status.ObservedGeneration = w.Generation
	w.Status.ReadyReplicas = dep.Status.ReadyReplicas
	w.Status.ServiceURL = fmt.Sprintf("http://%s.%s.svc:%d/hello/", svc.Name, svc.Namespace, w.Spec.Port)
	w.Status.NodePort, w.Status.NodePortURL = 0, ""
	if svc.Spec.Type == corev1.ServiceTypeNodePort && len(svc.Spec.Ports) > 0 && svc.Spec.Ports[0].NodePort != 0 {
		w.Status.NodePort = svc.Spec.Ports[0].NodePort
		w.Status.NodePortURL = fmt.Sprintf("http://<node-ip>:%d/hello/", w.Status.NodePort)
	}
	ready := metav1.Condition{
		Type:               ConditionReady,
		Status:             metav1.ConditionFalse,
		Reason:             "Progressing",
		Message:            fmt.Sprintf("%d/%d replicas ready", dep.Status.ReadyReplicas, replicas),
		ObservedGeneration: w.Generation,
	}
	if dep.Status.ReadyReplicas == replicas {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, "Available", "the site is available"
	}
	meta.SetStatusCondition(&w.Status.Conditions, ready)
	if err := r.Status().Update(ctx, &w); err != nil {
		return ctrl.Result{}, fmt.Errorf("update status of welcome %s: %w", req.NamespacedName, err)
	}

	if created {
		// Come back soon to see the new children progress.
		return ctrl.Result{Requeue: true}, nil //nolint:staticcheck // the tutorial way, on purpose
	}
	return ctrl.Result{}, nil
}

// deploymentSpec returns the whole Deployment spec of w.
func deploymentSpec(w *v1alpha1.Welcome) appsv1.DeploymentSpec {
	env := []corev1.EnvVar{
		{Name: "NAME", Value: w.Spec.Name},
		{Name: "PORT", Value: strconv.Itoa(int(w.Spec.Port))},
		{Name: "PAGE_FILE", Value: pageDir + "/" + pageKey},
	}
	if ref := w.Spec.PasswordSecretRef; ref != nil {
		env = append(env, corev1.EnvVar{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: ref.Key},
		}})
	}
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(w.Spec.Port)},
		}}
	}
	return appsv1.DeploymentSpec{
		Replicas: w.Spec.Replicas,
		Selector: &metav1.LabelSelector{MatchLabels: selectorLabels(w)},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: Labels(w)},
			Spec: corev1.PodSpec{
				SecurityContext: &corev1.PodSecurityContext{
					RunAsNonRoot:   ptr.To(true),
					RunAsUser:      w.Spec.UserID,
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
				Containers: []corev1.Container{{
					Name:  "web",
					Image: w.Spec.Image,
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: w.Spec.Port}},
					Env:   env,
					VolumeMounts: []corev1.VolumeMount{
						{Name: "page", MountPath: pageDir, ReadOnly: true},
					},
					LivenessProbe:  probe("/healthz"),
					ReadinessProbe: probe("/hello/"),
					SecurityContext: &corev1.SecurityContext{
						AllowPrivilegeEscalation: ptr.To(false),
						Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						ReadOnlyRootFilesystem:   ptr.To(true),
					},
				}},
				Volumes: []corev1.Volume{{
					Name: "page",
					VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: w.Name},
					}},
				}},
			},
		},
	}
}

// serviceSpec returns the whole Service spec of w.
func serviceSpec(w *v1alpha1.Welcome) corev1.ServiceSpec {
	port := corev1.ServicePort{Name: "http", Port: w.Spec.Port, TargetPort: intstr.FromString("http")}
	if w.Spec.ServiceType == corev1.ServiceTypeNodePort && w.Spec.NodePort != nil {
		port.NodePort = *w.Spec.NodePort
	}
	return corev1.ServiceSpec{
		Type:     w.Spec.ServiceType,
		Selector: selectorLabels(w),
		Ports:    []corev1.ServicePort{port},
	}
}
