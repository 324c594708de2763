package deploy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options configure Deploy and Undeploy.
type Options struct {
	// Root is the repository root; the example is examples/<Example> under it.
	Root string
	// Example names the example operator: "memcached" or "welcome".
	Example string
	// Kubeconfig is the kubeconfig file of the cluster (its current context).
	Kubeconfig string
	// SampleNamespace is the namespace of the samples (config/samples). It must exist. Default: "default".
	SampleNamespace string
	// Image replaces the operator's image in its Deployment. Default: the one config/manager sets.
	Image string
	// RunDir holds the local operator's binary, kubeconfig, log and process ID. Default:
	// <Root>/deploy-run/<Example>.
	RunDir string
	// Binary is the operator binary to run locally. Default: ./examples/<Example> built into RunDir.
	Binary string
	// Timeout bounds each wait (a CRD established, the Deployment Available, the samples Ready or gone).
	// Default: 3 minutes.
	Timeout time.Duration
	// Out receives progress lines. Default: discarded.
	Out io.Writer
}

// session is one Deploy or Undeploy: the options with defaults, the operator and a client.
type session struct {
	opts   Options
	op     *Operator
	config *rest.Config
	client client.Client
}

func newSession(opts Options) (*session, error) {
	if opts.Example == "" {
		return nil, errors.New("no example given: name one of the directories under examples/ with a config/default, e.g. welcome")
	}
	if opts.SampleNamespace == "" {
		opts.SampleNamespace = "default"
	}
	if opts.RunDir == "" {
		opts.RunDir = filepath.Join(opts.Root, "deploy-run", opts.Example)
	}
	if opts.Binary == "" {
		opts.Binary = filepath.Join(opts.RunDir, opts.Example+"-operator")
	}
	var err error
	if opts.RunDir, err = filepath.Abs(opts.RunDir); err != nil {
		return nil, err
	}
	if opts.Binary, err = filepath.Abs(opts.Binary); err != nil {
		return nil, err
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 3 * time.Minute
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	op, err := LoadOperator(filepath.Join(opts.Root, "examples", opts.Example), opts.Image)
	if err != nil {
		return nil, err
	}
	if opts.Kubeconfig == "" {
		return nil, errors.New("no kubeconfig given: name the cluster's kubeconfig file")
	}
	if _, err := os.Stat(opts.Kubeconfig); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w (start the local cluster with `make demo ARGS=--keep` in another terminal, or give another kubeconfig)", opts.Kubeconfig, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", opts.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", opts.Kubeconfig, err)
	}
	probe := rest.CopyConfig(cfg)
	probe.Timeout = 10 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(probe)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", opts.Kubeconfig, err)
	}
	if _, err := dc.ServerVersion(); err != nil {
		return nil, fmt.Errorf("cannot reach the API server %s of kubeconfig %s: %w (is the cluster running? `make demo ARGS=--keep` starts the local one and leaves it running)", cfg.Host, opts.Kubeconfig, err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("build scheme: %w", err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("build scheme: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	return &session{opts: opts, op: op, config: cfg, client: c}, nil
}

func (s *session) step(format string, args ...any) {
	fmt.Fprintf(s.opts.Out, "\n==> "+format+"\n", args...)
}

func (s *session) printf(format string, args ...any) {
	fmt.Fprintf(s.opts.Out, format, args...)
}

// Deploy deploys the example operator as `kubectl apply --server-side -k config/default` would, and
// runs it:
//
//  1. server-side applies config/default (namespace, CRDs, RBAC, the operator's Deployment, metrics
//     Service) as FieldOwner and waits until the CRDs are established and the Deployment is Available;
//  2. when the Deployment's pods are on kwok's fake nodes (the local cluster of `make demo`), which run
//     no container, starts the operator from its binary as a local process, with the Deployment's
//     arguments and, through impersonation, exactly the permissions of its ServiceAccount (a process
//     left by an earlier Deploy is stopped first); on a cluster with real nodes the Deployment's pods
//     are the operator;
//  3. applies config/samples into SampleNamespace (a password Secret first for a sample that names one)
//     and waits until every sample is Ready.
//
// The local operator keeps running after Deploy returns, until Undeploy stops it (or the cluster goes
// away: it then loses its leader Lease and exits).
func Deploy(ctx context.Context, opts Options) error {
	s, err := newSession(opts)
	if err != nil {
		return err
	}
	op := s.op
	s.step("Applying %s/config/default server-side (field manager %s) to %s", relative(s.opts.Root, op.Dir), FieldOwner, s.config.Host)
	if _, err := Apply(ctx, s.client, op.Objects, s.opts.Timeout); err != nil {
		return err
	}
	for _, o := range op.Objects {
		s.printf("  %s\n", objectID(o))
	}
	if err := WaitEstablished(ctx, s.client, op.CRDs, s.opts.Timeout); err != nil {
		return err
	}
	key := client.ObjectKeyFromObject(op.Deployment)
	s.step("Waiting for Deployment %s to be Available", key)
	dep, err := WaitAvailable(ctx, s.client, key, s.opts.Timeout)
	if err != nil {
		return fmt.Errorf("%w (on a cluster with real nodes, the image %s must be pullable: build and push it, and pass its name with IMG=)", err, op.Deployment.Spec.Template.Spec.Containers[0].Image)
	}
	fake, err := OnFakeNodes(ctx, s.client, dep)
	if err != nil {
		return err
	}
	if fake {
		s.printf("Available: its pods are on kwok's fake nodes, which run no container.\n")
		if _, err := s.startOperator(ctx); err != nil {
			return err
		}
	} else {
		s.printf("Available: its pods run the operator image %s.\n", dep.Spec.Template.Spec.Containers[0].Image)
	}

	samples, err := op.Samples(s.opts.SampleNamespace)
	if err != nil {
		return err
	}
	secrets, err := Prerequisites(samples)
	if err != nil {
		return err
	}
	s.step("Applying %s/config/samples in namespace %s", relative(s.opts.Root, op.Dir), s.opts.SampleNamespace)
	for _, sec := range secrets {
		// Created once, never overwritten: the password is nobody's business but the Secret's.
		if err := s.client.Create(ctx, sec); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create Secret %s/%s for the samples: %w", sec.Namespace, sec.Name, err)
		} else if err == nil {
			s.printf("  Secret/%s/%s with a random password (never printed)\n", sec.Namespace, sec.Name)
		}
	}
	if _, err := Apply(ctx, s.client, samples, s.opts.Timeout); err != nil {
		return err
	}
	for _, o := range samples {
		s.printf("  %s\n", objectID(o))
	}
	if err := WaitReady(ctx, s.client, samples, s.opts.Timeout); err != nil {
		return fmt.Errorf("%w; see the operator's log %s", err, filepath.Join(s.opts.RunDir, logFile))
	}
	s.printf("Ready: %s.\n", names(samples))
	return nil
}

// startOperator builds the operator when needed, stops the one an earlier Deploy left, and starts it as
// a local process impersonating its ServiceAccount.
func (s *session) startOperator(ctx context.Context) (*localOperator, error) {
	op := s.op
	if old := runningLocal(s.opts.RunDir, s.opts.Binary); old != nil {
		s.printf("Stopping the operator an earlier deploy started (pid %d).\n", old.pid)
		if err := old.stop(); err != nil {
			return nil, err
		}
	}
	if s.opts.Binary == filepath.Join(s.opts.RunDir, s.opts.Example+"-operator") {
		s.step("Building the %s operator: go build -o %s ./examples/%s", op.Name, relative(s.opts.Root, s.opts.Binary), op.Name)
		if err := BuildOperator(ctx, s.opts.Root, op.Name, s.opts.Binary); err != nil {
			return nil, err
		}
	}
	kubeconfig := filepath.Join(s.opts.RunDir, kubeconfigFile)
	if err := op.WriteKubeconfig(s.opts.Kubeconfig, kubeconfig); err != nil {
		return nil, err
	}
	s.step("Running the operator from the built binary %s as a local process, not from an image,\n"+
		"    as ServiceAccount %s/%s (impersonated as %s; kubeconfig %s)",
		relative(s.opts.Root, s.opts.Binary), op.Namespace, op.ServiceAccount, op.UserName(), relative(s.opts.Root, kubeconfig))
	lo, err := op.startLocal(ctx, s.opts.Binary, kubeconfig, s.opts.RunDir, s.opts.Timeout)
	if err != nil {
		return nil, err
	}
	s.printf("Running: pid %d, log %s.\n", lo.pid, relative(s.opts.Root, lo.logPath))
	return lo, nil
}

// Undeploy removes what Deploy applied, in an order that honours the operator's finalizers:
//
//  1. the samples, and, when a CRD is to be deleted, every other object of its kinds (deleting the CRD
//     would delete them anyway), while the operator still runs and releases them (if no operator runs,
//     a local one is started for as long as it takes); it waits until they are gone;
//  2. the samples' password Secrets Deploy created;
//  3. the local operator process;
//  4. the objects of config/default in reverse install order (the Deployment, the RBAC, the CRDs, the
//     namespace) and waits until they are gone. A CRD that another field manager also created or
//     applied (the demo installs the examples' CRDs itself) is kept, and with it the objects of its
//     kind other than the samples.
func Undeploy(ctx context.Context, opts Options) error {
	s, err := newSession(opts)
	if err != nil {
		return err
	}
	op := s.op
	samples, err := op.Samples(s.opts.SampleNamespace)
	if err != nil {
		return err
	}
	var kept []*apiextensionsv1.CustomResourceDefinition
	var custom []*unstructured.Unstructured // the custom resources to delete before the operator stops
	custom = append(custom, samples...)
	for _, crd := range op.CRDs {
		var live apiextensionsv1.CustomResourceDefinition
		if err := s.client.Get(ctx, client.ObjectKey{Name: crd.Name}, &live); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return fmt.Errorf("get CustomResourceDefinition %s: %w", crd.Name, err)
		}
		if others := OtherManagers(&live); len(others) > 0 {
			s.printf("Keeping CustomResourceDefinition %s and the objects of its kind other than the samples: it is managed by %s too.\n", crd.Name, strings.Join(others, ", "))
			kept = append(kept, crd)
			continue
		}
		all, err := ListAll(ctx, s.client, &live)
		if err != nil {
			return err
		}
		for _, o := range all {
			if !containsObject(custom, o) {
				custom = append(custom, o)
			}
		}
	}

	lo := runningLocal(s.opts.RunDir, s.opts.Binary)
	if lo == nil {
		needed, err := s.needsOperator(ctx, custom)
		if err != nil {
			return err
		}
		if needed {
			s.printf("No operator runs (no local one from an earlier deploy, no pod on a real node), and objects of its kinds\n" +
				"hold finalizers: starting a local one for as long as the deletion takes.\n")
			if lo, err = s.startOperator(ctx); err != nil {
				return err
			}
		}
	}
	s.step("Deleting %s while the operator runs, so that it releases them (finalizers)", names(custom))
	if err := Delete(ctx, s.client, custom); err != nil {
		return err
	}
	if err := WaitGone(ctx, s.client, custom, s.opts.Timeout); err != nil {
		return fmt.Errorf("%w: the operator did not release them; see its log %s", err, filepath.Join(s.opts.RunDir, logFile))
	}
	secrets, err := Prerequisites(samples)
	if err != nil {
		return err
	}
	for _, sec := range secrets {
		var live corev1.Secret
		err := s.client.Get(ctx, client.ObjectKeyFromObject(sec), &live)
		if err == nil && live.Labels[ManagedByLabel] == FieldOwner {
			if err := s.client.Delete(ctx, &live); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete Secret %s/%s: %w", sec.Namespace, sec.Name, err)
			}
			s.printf("  Secret/%s/%s deleted\n", sec.Namespace, sec.Name)
		}
	}
	if lo != nil {
		s.step("Stopping the local operator (pid %d)", lo.pid)
		if err := lo.stop(); err != nil {
			return err
		}
		_ = os.Remove(filepath.Join(s.opts.RunDir, pidFile))
	}

	var remove []*unstructured.Unstructured
	for _, o := range op.Objects {
		keep := false
		for _, crd := range kept {
			keep = keep || (o.GroupVersionKind().GroupKind() == crdGroupKind && o.GetName() == crd.Name)
		}
		if !keep {
			remove = append(remove, o)
		}
	}
	s.step("Deleting %s/config/default: the operator's Deployment, RBAC, CRDs and namespace", relative(s.opts.Root, op.Dir))
	if err := Delete(ctx, s.client, remove); err != nil {
		return err
	}
	if err := WaitGone(ctx, s.client, remove, s.opts.Timeout); err != nil {
		return err
	}
	for i := len(remove) - 1; i >= 0; i-- {
		s.printf("  %s\n", objectID(remove[i]))
	}
	s.printf("Gone.\n")
	return nil
}

// needsOperator reports whether an object of objs holds a finalizer and no operator runs in the
// cluster to release it: the Deployment's pods are not on real nodes.
func (s *session) needsOperator(ctx context.Context, objs []*unstructured.Unstructured) (bool, error) {
	held := false
	for _, o := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		if err := s.client.Get(ctx, client.ObjectKeyFromObject(o), live); err == nil && len(live.GetFinalizers()) > 0 {
			held = true
		}
	}
	if !held {
		return false, nil
	}
	dep := s.op.Deployment.DeepCopy()
	if err := s.client.Get(ctx, client.ObjectKeyFromObject(dep), dep); apierrors.IsNotFound(err) {
		return true, nil
	} else if err != nil {
		return false, fmt.Errorf("get the operator's Deployment: %w", err)
	}
	pods, err := podsOf(ctx, s.client, dep)
	if err != nil {
		return false, err
	}
	if len(pods) == 0 {
		return true, nil
	}
	fake, err := OnFakeNodes(ctx, s.client, dep)
	return fake, err
}

func containsObject(objs []*unstructured.Unstructured, o *unstructured.Unstructured) bool {
	for _, x := range objs {
		if x.GroupVersionKind().GroupKind() == o.GroupVersionKind().GroupKind() && x.GetNamespace() == o.GetNamespace() && x.GetName() == o.GetName() {
			return true
		}
	}
	return false
}

// names lists the objects as Kind/namespace/name.
func names(objs []*unstructured.Unstructured) string {
	if len(objs) == 0 {
		return "nothing"
	}
	var out []string
	for _, o := range objs {
		out = append(out, objectID(o))
	}
	return strings.Join(out, ", ")
}

// relative returns path relative to root for display, or path.
func relative(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}
