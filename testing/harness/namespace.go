package harness

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cleanupTimeout bounds API calls made from t.Cleanup, where the test's context is already cancelled.
const cleanupTimeout = 30 * time.Second

// Namespace creates a fresh namespace named after the test (test-<sanitised test name>-<random>) and
// deletes it when the test ends. Plain mode has no namespace controller, so the namespace then stays
// Terminating; objects in it remain readable until the environment stops.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(t.Name())}}
	if err := e.Client.Create(t.Context(), ns); err != nil {
		t.Fatalf("create test namespace: %v", err)
	}
	name := ns.Name
	t.Cleanup(func() {
		// t.Context() is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), cleanupTimeout)
		defer cancel()
		del := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := e.Client.Delete(ctx, del); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete test namespace %s: %v", name, err)
		}
	})
	return name
}

// maxPrefixName bounds the test-name part of a namespace: "test-" + 50 + "-" + 5 random characters
// stays within the 63 characters of a DNS label.
const maxPrefixName = 50

// namespacePrefix returns the generateName for a test's namespace.
func namespacePrefix(testName string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(testName) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := b.String()
	if len(s) > maxPrefixName {
		s = s[:maxPrefixName]
	}
	s = strings.Trim(s, "-")
	if s == "" {
		return "test-"
	}
	return "test-" + s + "-"
}
