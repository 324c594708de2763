//go:build integration

package reliability_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/examples/internal/reliability"
	welcomev1 "github.com/convergo-dev/convergo/examples/welcome/api/v1alpha1"
	welcome "github.com/convergo-dev/convergo/examples/welcome/controller"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/harness"
)

// secretValue returns a random value that cannot occur anywhere by chance.
func secretValue(t *testing.T, prefix string) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + "-" + hex.EncodeToString(b)
}

// TestNoSecretLeaks runs the Welcome operator, the one that handles a password, through every path
// that touches the Secret: a Welcome naming a Secret that does not exist yet (stalled, logged, an
// event), the Secret appearing, the password rotated (the pods roll), and deletion. Its log is
// captured at every verbosity with the zap logger production operators use. Then every Welcome (spec,
// status, metadata and managed fields), every event, every log line and every child (ConfigMap,
// Deployment, ReplicaSet, Service, pod) is searched for the passwords, plain and base64-encoded.
func TestNoSecretLeaks(t *testing.T) {
	env := harness.Default()
	ns := env.Namespace(t)
	logs := &reliability.LogBuffer{}
	op := reliability.Welcome
	reliability.StartManager(t, env.Config, env.Scheme, op.Setup, reliability.WithName(op.Name),
		reliability.WithNamespace(ns), reliability.WithLogger(reliability.CaptureLogger(logs)))
	reliability.DeleteAtCleanup(t, env.Client, op, ns)

	passwords := []string{secretValue(t, "first-password"), secretValue(t, "rotated-password"), secretValue(t, "unused-key")}
	w := &welcomev1.Welcome{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice"},
		Spec: welcomev1.WelcomeSpec{
			Name:              "Alice",
			Email:             "alice@example.com",
			PasswordSecretRef: &welcomev1.SecretKeyRef{Name: "alice-password", Key: "password"},
		},
	}
	if err := env.Client.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	harness.WaitForObject(t, env.Client, client.ObjectKeyFromObject(w), &welcomev1.Welcome{}, convergeTimeout,
		func(w *welcomev1.Welcome) bool {
			c := meta.FindStatusCondition(w.GetConditions(), status.Stalled)
			return c != nil && c.Status == metav1.ConditionTrue && c.Reason == welcome.ReasonSecretNotFound
		})

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice-password"},
		StringData: map[string]string{"password": passwords[0], "unused": passwords[2]},
	}
	if err := env.Client.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	exp := reliability.Expectation{Operator: op, Namespace: ns}
	reliability.WaitConverged(t, env.Client, exp, convergeTimeout)
	rolled := podTemplateAnnotation(t, env.Client, ns, "alice")

	// Rotate the password: the pods must roll, still without the value passing through the operator.
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(secret), secret); err != nil {
			return err
		}
		secret.Data = nil
		secret.StringData = map[string]string{"password": passwords[1], "unused": passwords[2]}
		return env.Client.Update(t.Context(), secret)
	})
	if err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, convergeTimeout, func() (bool, string) {
		now := podTemplateAnnotation(t, env.Client, ns, "alice")
		return now != rolled, fmt.Sprintf("pod template annotation %s still %q", welcome.PasswordVersionAnnotation, now)
	})
	reliability.WaitConverged(t, env.Client, exp, convergeTimeout)

	// Search everything the operator wrote or said.
	var haystacks []haystack
	var welcomes welcomev1.WelcomeList
	mustList(t, env.Client, ns, &welcomes)
	haystacks = append(haystacks, asHaystacks(t, "Welcome", &welcomes)...)
	for kind, list := range map[string]client.ObjectList{
		"Event (events.k8s.io/v1)": &eventsv1.EventList{},
		"Event (v1)":               &corev1.EventList{},
		"ConfigMap":                &corev1.ConfigMapList{},
		"Service":                  &corev1.ServiceList{},
		"Deployment":               &appsv1.DeploymentList{},
		"ReplicaSet":               &appsv1.ReplicaSetList{},
		"Pod":                      &corev1.PodList{},
	} {
		mustList(t, env.Client, ns, list)
		haystacks = append(haystacks, asHaystacks(t, kind, list)...)
	}
	logText := logs.String()
	for i, line := range strings.Split(logText, "\n") {
		haystacks = append(haystacks, haystack{what: fmt.Sprintf("log line %d", i+1), text: line})
	}

	// Positive control: the search finds the values where they belong.
	var secrets corev1.SecretList
	mustList(t, env.Client, ns, &secrets)
	for _, p := range passwords[1:] {
		if leaks := search(asHaystacks(t, "Secret", &secrets), p); len(leaks) == 0 {
			t.Fatalf("the search does not find %q in the Secret itself: it cannot find leaks either", p)
		}
	}
	for _, p := range passwords {
		for _, leak := range search(haystacks, p) {
			t.Errorf("secret value leaked into %s", leak)
		}
	}
	if !strings.Contains(logText, "alice-password") || !strings.Contains(logText, welcome.ReasonSecretNotFound) {
		t.Errorf("the captured log does not mention the missing Secret: is the log captured at all? (%d bytes)", len(logText))
	}
	t.Logf("FIGURES secrets: %d passwords searched (plain and base64) in %d objects, events and log lines (%d log bytes); leaks: 0",
		len(passwords), len(haystacks), len(logText))
}

// haystack is one text searched for secret values.
type haystack struct{ what, text string }

func asHaystacks(t *testing.T, kind string, list client.ObjectList) []haystack {
	t.Helper()
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]haystack, 0, len(items))
	for _, item := range items {
		data, err := json.Marshal(item)
		if err != nil {
			t.Fatal(err)
		}
		name := "?"
		if o, ok := item.(client.Object); ok {
			name = o.GetName()
		}
		out = append(out, haystack{what: kind + " " + name, text: string(data)})
	}
	return out
}

// search returns where value occurs, plain or base64-encoded (standard or URL alphabet).
func search(haystacks []haystack, value string) []string {
	needles := []string{
		value,
		base64.StdEncoding.EncodeToString([]byte(value)),
		base64.URLEncoding.EncodeToString([]byte(value)),
		base64.RawStdEncoding.EncodeToString([]byte(value)),
	}
	var found []string
	for _, h := range haystacks {
		for _, n := range needles {
			if strings.Contains(h.text, n) {
				found = append(found, fmt.Sprintf("%s: %q", h.what, excerpt(h.text, n)))
				break
			}
		}
	}
	return found
}

func excerpt(text, needle string) string {
	i := strings.Index(text, needle)
	from, to := max(i-60, 0), min(i+len(needle)+60, len(text))
	return text[from:to]
}

func mustList(t *testing.T, c client.Client, ns string, list client.ObjectList) {
	t.Helper()
	if err := c.List(t.Context(), list, client.InNamespace(ns)); err != nil {
		t.Fatalf("list %T: %v", list, err)
	}
}

// podTemplateAnnotation returns the Deployment's pod template annotation that carries the Secret's
// version.
func podTemplateAnnotation(t *testing.T, c client.Client, ns, name string) string {
	t.Helper()
	var d appsv1.Deployment
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
		t.Fatalf("get deployment: %v", err)
	}
	return d.Spec.Template.Annotations[welcome.PasswordVersionAnnotation]
}
