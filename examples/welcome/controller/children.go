package controller

import (
	"bytes"
	"fmt"
	"html/template"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/convergo-dev/convergo/builders"
	"github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	"github.com/convergo-dev/convergo/reconcile/graph"
)

const (
	// PageKey is the ConfigMap key of the page, mounted as PageDir/PageKey in the web server.
	PageKey = "page.html"
	// PageDir is where the page ConfigMap is mounted in the web server's container.
	PageDir = "/etc/welcome"
	// PasswordVersionAnnotation holds the password Secret's resourceVersion on the pod template: a new one rolls the pods.
	PasswordVersionAnnotation = "web.convergo.dev/password-version"
)

// Labels returns the standard labels of a Welcome's children; Labels(w).Selector() selects its pods.
func Labels(w *v1alpha1.Welcome) builders.Labels {
	return builders.Labels{Name: "welcome", Instance: w.Name, Component: "web", PartOf: "welcome", ManagedBy: Name}
}

// Children returns the children of w: the page ConfigMap, then the Deployment of web servers that
// mounts it (and rolls when it changes), and the Service. password is the metadata of the Secret
// spec.passwordSecretRef names (nil for none): its resourceVersion rolls the pods when it changes; the
// password itself reaches them through a secretKeyRef variable, never through the operator.
func Children(w *v1alpha1.Welcome, password *metav1.PartialObjectMetadata) (*graph.Graph, error) {
	spec, labels := w.Spec, Labels(w)
	page, err := RenderPage(spec)
	if err != nil {
		return nil, err
	}
	configMap := builders.ConfigMap(w.Name, w.Namespace, labels, map[string]string{PageKey: page})

	env := []corev1.EnvVar{
		builders.EnvLiteral("NAME", spec.Name),
		builders.EnvLiteral("PORT", strconv.Itoa(int(spec.Port))),
		builders.EnvLiteral("PAGE_FILE", PageDir+"/"+PageKey),
	}
	podOpts := []builders.PodOption{builders.WithVolumes(builders.ConfigMapVolume("page", configMap.Name)), builders.WithRolloutOnChange(configMap)}
	if ref := spec.PasswordSecretRef; ref != nil {
		env = append(env, builders.EnvFromSecret("PASSWORD", ref.Name, ref.Key))
		if password != nil {
			podOpts = append(podOpts, builders.WithPodAnnotation(PasswordVersionAnnotation, password.ResourceVersion))
		}
	}
	if spec.UserID != nil {
		podOpts = append(podOpts, builders.WithRunAsUser(*spec.UserID))
	}
	container := builders.Container("web", spec.Image,
		builders.WithPort("http", spec.Port),
		builders.WithEnv(env...),
		builders.WithReadOnlyVolumeMount("page", PageDir),
		builders.WithLivenessProbe(builders.HTTPProbe("/healthz", spec.Port)),
		builders.WithReadinessProbe(builders.HTTPProbe("/hello/", spec.Port)),
	)
	pod := builders.PodTemplate(labels, []corev1.Container{container}, podOpts...)
	deployment := builders.Deployment(w.Name, w.Namespace, labels, pod, builders.WithReplicas(ptr.Deref(spec.Replicas, 1)))

	port := corev1.ServicePort{Name: "http", Port: spec.Port, TargetPort: intstr.FromString("http")}
	if spec.ServiceType == corev1.ServiceTypeNodePort {
		port.NodePort = ptr.Deref(spec.NodePort, 0)
	}
	service := builders.Service(w.Name, w.Namespace, labels, builders.WithServicePorts(port), builders.WithServiceType(spec.ServiceType))

	g := graph.New()
	// The pods mount the page, so the Deployment waits for it. The Service needs nothing (it routes
	// only to ready pods anyway), so it is applied while the page and the Deployment are, and a port
	// change reaches it without waiting for the rollout. Deletion runs the other way: the Deployment
	// first, then the page and the Service.
	g.Add("page", configMap)
	g.Add("deployment", deployment).DependsOn("page").ReadyWhen(builders.DeploymentAvailable)
	g.Add("service", service).ReadyWhen(builders.ServiceReady)
	return g, nil
}

var pageTemplate = template.Must(template.New("page").Parse(`<dl class="profile">
{{- with .Email}}
<dt>E-mail</dt><dd><a href="mailto:{{.}}">{{.}}</a></dd>
{{- end}}
{{- with .Groups}}
<dt>Groups</dt><dd>{{.}}</dd>
{{- end}}
{{- with .UserID}}
<dt>User ID</dt><dd>{{.}}</dd>
{{- end}}
</dl>
`))

// RenderPage returns the HTML fragment the web server shows under its greeting: the user's e-mail,
// groups and user ID, every value escaped. The greeting itself comes from the NAME variable.
func RenderPage(spec v1alpha1.WelcomeSpec) (string, error) {
	data := struct {
		Email  string
		Groups string
		UserID string
	}{Email: spec.Email, Groups: strings.Join(spec.Groups, ", ")}
	if spec.UserID != nil {
		data.UserID = strconv.FormatInt(*spec.UserID, 10)
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, data); err != nil {
		return "", fmt.Errorf("render page: %w", err)
	}
	return b.String(), nil
}
