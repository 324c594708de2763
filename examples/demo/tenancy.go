package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	tenancyv1alpha1 "github.com/convergo-dev/convergo/examples/tenancy/api/v1alpha1"
	tenancy "github.com/convergo-dev/convergo/examples/tenancy/controller"
	"github.com/convergo-dev/convergo/reconcile/member"
	"github.com/convergo-dev/convergo/status"
	"github.com/convergo-dev/convergo/testing/harness"
)

// memberNames are the demo's member clusters.
var memberNames = []string{"eu-1", "us-1"}

// tenancySteps shows the tenancy operator: the local cluster is the hub, two more kube-apiservers are
// member clusters named by kubeconfig Secrets, and a Tenant is placed in both, moved out of one, and
// deleted.
func (d *demo) tenancySteps(ctx context.Context) error {
	step(d.out, "Starting two member clusters, "+strings.Join(memberNames, " and ")+" (a kube-apiserver and etcd each), named in the hub by kubeconfig Secrets")
	members := map[string]client.Client{}
	for _, name := range memberNames {
		env, err := harness.Start(ctx)
		if err != nil {
			return fmt.Errorf("start member cluster %s: %w", name, err)
		}
		defer env.Stop()
		members[name] = env.Client
		kubeconfig, err := os.ReadFile(env.KubeconfigPath)
		if err != nil {
			return err
		}
		if err := d.ensureMemberSecret(ctx, name, kubeconfig); err != nil {
			return err
		}
		fmt.Fprintf(d.out, "  %s: %s (kubeconfig %s)\n", name, env.Config.Host, env.KubeconfigPath)
	}
	if _, err := envtest.InstallCRDs(d.config, envtest.CRDInstallOptions{
		Paths:              []string{d.root + "/examples/tenancy/config/crd/bases"},
		ErrorIfPathMissing: true, MaxTime: d.opts.timeout,
	}); err != nil {
		return fmt.Errorf("install the Tenant CRD: %w", err)
	}
	stop, err := startTenancy(d.config)
	if err != nil {
		return err
	}
	defer stop()

	step(d.out, `Creating Tenant payments in the hub: members eu-1 and us-1, admin alice@example.com, at most 50 pods`)
	t := &tenancyv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "payments"}, Spec: tenancyv1alpha1.TenantSpec{
		Members: memberNames, Admins: []string{"alice@example.com"},
		Quota: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("50")},
	}}
	if err := d.client.Create(ctx, t); err != nil {
		return fmt.Errorf("create tenant: %w", err)
	}
	if err := d.waitTenant(ctx, memberNames); err != nil {
		return err
	}
	d.printPlacement(ctx, members)

	step(d.out, "Moving Tenant payments out of us-1: its quota and access go there, its namespace stays (the team's workloads are in it)")
	if err := d.client.Patch(ctx, t, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"members":["eu-1"]}}`))); err != nil {
		return fmt.Errorf("patch tenant payments: %w", err)
	}
	if err := d.waitTenant(ctx, memberNames[:1]); err != nil {
		return err
	}
	if err := d.waitGone(ctx, members["us-1"], &corev1.ResourceQuota{}, "payments", "tenant"); err != nil {
		return err
	}
	d.printPlacement(ctx, members)

	step(d.out, "Deleting Tenant payments: its quota and access go from eu-1, then its finalizer")
	if err := d.client.Delete(ctx, t); err != nil {
		return fmt.Errorf("delete tenant: %w", err)
	}
	if err := d.waitGone(ctx, d.client, &tenancyv1alpha1.Tenant{}, "", "payments"); err != nil {
		return err
	}
	d.printPlacement(ctx, members)
	fmt.Fprintln(d.out, "Tenant payments deleted: no quota or access left in any member; the namespaces stay, without the operator's marks.")
	return nil
}

// ensureMemberSecret creates the hub Secret naming member name.
func (d *demo) ensureMemberSecret(ctx context.Context, name string, kubeconfig []byte) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "convergo-system"}}
	if err := d.client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace convergo-system: %w", err)
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "member-" + name, Namespace: ns.Name, Labels: map[string]string{member.SecretLabel: name}},
		Data:       map[string][]byte{member.SecretKey: kubeconfig},
	}
	if err := d.client.Create(ctx, s); err != nil {
		return fmt.Errorf("create the Secret of member cluster %s: %w", name, err)
	}
	return nil
}

// startTenancy runs the tenancy operator on the hub cfg, as its main does, and returns the function
// that stops it.
func startTenancy(cfg *rest.Config) (func(), error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := tenancyv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	opts := ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"}
	tenancy.CacheOptions(&opts.Cache)
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("create the tenancy manager: %w", err)
	}
	members := member.NewSet(mgr)
	if err := members.FromSecrets("convergo-system", tenancy.NewMember(scheme, 10*time.Second)); err != nil {
		return nil, err
	}
	if err := tenancy.Setup(members)(mgr); err != nil {
		return nil, err
	}
	return startManager(mgr, "tenancy operator"), nil
}

// waitTenant waits until Tenant payments is Ready and placed in exactly placed.
func (d *demo) waitTenant(ctx context.Context, placed []string) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.timeout)
	defer cancel()
	for {
		t := &tenancyv1alpha1.Tenant{}
		err := d.client.Get(ctx, client.ObjectKey{Name: "payments"}, t)
		if err == nil && status.IsReady(t) && slices.Equal(t.Status.Placed, placed) {
			fmt.Fprintf(d.out, "Tenant payments: Ready, placed in %s.\n", strings.Join(placed, ", "))
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("tenant payments not Ready and placed in %v: %v (status %+v)", placed, err, t.Status)
		case <-time.After(pollInterval):
		}
	}
}

// waitGone waits until the object name (in namespace ns) is gone.
func (d *demo) waitGone(ctx context.Context, c client.Client, obj client.Object, ns, name string) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.timeout)
	defer cancel()
	for {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%T %s/%s still there: %v", obj, ns, name, err)
		case <-time.After(pollInterval):
		}
	}
}

// printPlacement prints, per member, what the tenant has there, read from each member's API server.
func (d *demo) printPlacement(ctx context.Context, members map[string]client.Client) {
	w := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  MEMBER\tNAMESPACE payments\tQUOTA\tADMINS")
	for _, name := range memberNames {
		c := members[name]
		ns, quota, admins := "-", "-", "-"
		n := &corev1.Namespace{}
		if err := c.Get(ctx, client.ObjectKey{Name: "payments"}, n); err == nil {
			ns = "present"
			if n.Labels["convergo.dev/owner-uid"] != "" {
				ns = "present, the tenant's"
			}
		}
		q := &corev1.ResourceQuota{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "payments", Name: "tenant"}, q); err == nil {
			quota = "pods " + q.Spec.Hard.Pods().String()
		}
		b := &rbacv1.RoleBinding{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "payments", Name: "tenant-admins"}, b); err == nil && len(b.Subjects) > 0 {
			admins = b.Subjects[0].Name + " (admin)"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", name, ns, quota, admins)
	}
	_ = w.Flush()
}
