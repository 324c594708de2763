package builders_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/convergo-dev/convergo/builders"
)

// restrictedViolations evaluates a pod against the latest "restricted" Pod Security Standard with
// the same checks the API server's PodSecurity admission runs, and returns the forbidden reasons.
func restrictedViolations(t *testing.T, pod corev1.PodTemplateSpec) []string {
	t.Helper()
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatalf("new evaluator: %v", err)
	}
	lv := api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}
	var violations []string
	for _, r := range evaluator.EvaluatePod(lv, &pod.ObjectMeta, &pod.Spec) {
		if !r.Allowed {
			violations = append(violations, r.ForbiddenReason+" ("+r.ForbiddenDetail+")")
		}
	}
	return violations
}

// TestRestrictedPodSecurityStandard checks every pod-producing builder's output against the
// restricted standard across option combinations.
func TestRestrictedPodSecurityStandard(t *testing.T) {
	containerOpts := map[string][]builders.ContainerOption{
		"no options":               nil,
		"writable root filesystem": {builders.WithWritableRootFilesystem()},
		"everything": {
			builders.WithPort("http", 8080),
			builders.WithEnv(builders.EnvLiteral("A", "1"), builders.EnvFromSecret("B", "s", "b")),
			builders.WithLivenessProbe(builders.HTTPProbe("/healthz", 8080)),
			builders.WithReadinessProbe(builders.TCPProbe(8080)),
			builders.WithRequests("100m", "64Mi"), builders.WithLimits("1", "128Mi"),
			builders.WithVolumeMount("tmp", "/tmp"), builders.WithReadOnlyVolumeMount("config", "/etc/app"),
			builders.WithImagePullPolicy(corev1.PullAlways),
		},
	}
	podOpts := map[string][]builders.PodOption{
		"no options":      nil,
		"user and groups": {builders.WithRunAsUser(1000), builders.WithRunAsGroup(1000), builders.WithFSGroup(1000)},
		"volumes, init container, service account": {
			builders.WithVolumes(builders.EmptyDirVolume("tmp"), builders.ConfigMapVolume("config", "c"), builders.SecretVolume("s", "s")),
			builders.WithInitContainers(builders.Container("init", "img", builders.WithWritableRootFilesystem())),
			builders.WithServiceAccount("sa"),
			builders.WithPodAnnotation("a", "b"),
		},
	}
	for cname, copts := range containerOpts {
		for pname, popts := range podOpts {
			containers := []corev1.Container{
				builders.Container("app", "img", copts...),
				builders.Container("sidecar", "img"),
			}
			pod := builders.PodTemplate(testLabels, containers, popts...)
			outputs := map[string]corev1.PodTemplateSpec{
				"PodTemplate": pod,
				"Deployment":  builders.Deployment("d", "ns", testLabels, pod, builders.WithReplicas(2)).Spec.Template,
				"StatefulSet": builders.StatefulSet("s", "ns", testLabels, pod, builders.WithVolumeClaimTemplates(builders.VolumeClaim("data", "1Gi"))).Spec.Template,
			}
			for builder, out := range outputs {
				t.Run(builder+"/"+cname+"/"+pname, func(t *testing.T) {
					if v := restrictedViolations(t, out); len(v) > 0 {
						t.Errorf("violates restricted:\n%s", strings.Join(v, "\n"))
					}
				})
			}
		}
	}
}

// TestRestrictedPodSecurityStandardRejects shows that the check used above does fail: a pod that
// runs as root, or a container that drops the restricted defaults, is rejected.
func TestRestrictedPodSecurityStandardRejects(t *testing.T) {
	cases := map[string]struct {
		pod  corev1.PodTemplateSpec
		want string
	}{
		"runAsUser 0": {
			pod:  builders.PodTemplate(testLabels, []corev1.Container{builders.Container("app", "img")}, builders.WithRunAsUser(0)),
			want: "runAsUser=0",
		},
		"container without the restricted security context": {
			pod:  builders.PodTemplate(testLabels, []corev1.Container{{Name: "raw", Image: "img"}}),
			want: "allowPrivilegeEscalation != false",
		},
		"pod without the restricted security context": {
			pod: builders.PodTemplate(testLabels, []corev1.Container{builders.Container("app", "img")},
				func(p *corev1.PodTemplateSpec) { p.Spec.SecurityContext = nil }),
			want: "runAsNonRoot != true",
		},
		"capability added": {
			pod: builders.PodTemplate(testLabels, []corev1.Container{builders.Container("app", "img", func(c *corev1.Container) {
				c.SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
			})}),
			want: "unrestricted capabilities",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := restrictedViolations(t, tc.pod)
			if !strings.Contains(strings.Join(v, "\n"), tc.want) {
				t.Errorf("violations = %q, want one containing %q", v, tc.want)
			}
		})
	}
}
