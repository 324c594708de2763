package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
)

const usage = `kubectl convergo shows what Convergo operators built.

Usage:
  kubectl convergo tree <resource>/<name> [-n namespace] [-o json]
  kubectl convergo tree <resource> <name> [-n namespace] [-o json]

tree prints the object's Ready condition and its children (found by the label
convergo.dev/owner-uid) in the order of its graph, with the readiness of each and
the check that judged it. Children in member clusters are shown too, with a
CLUSTER column: the members named by the Secrets labelled
convergo.dev/member-cluster in --member-secrets-namespace, and those of --member.

Examples:
  kubectl convergo tree welcome/alice -n demo
  kubectl convergo tree memcacheds.cache.convergo.dev sessions -o json
  kubectl convergo tree welcome/alice -n demo --member eu-1=$HOME/.kube/eu-1

Flags:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// treeArgs is a parsed command line.
type treeArgs struct {
	resource, name string
	output         string
	// memberSecretsNamespace is the hub namespace whose Secrets name member clusters; "" for none.
	memberSecretsNamespace string
	// members are the kubeconfig files of --member, by member name.
	members map[string]string
	// config is the client configuration: the kubeconfig files with kubectl's flags applied.
	config clientcmd.ClientConfig
}

// errHelp is returned by parseArgs when help was asked for.
var errHelp = errors.New("help requested")

// parseArgs parses the command line (without the program name). Connection flags are kubectl's:
// --kubeconfig, --context, -n/--namespace and the other flags of clientcmd.RecommendedConfigOverrideFlags.
func parseArgs(args []string, stderr io.Writer) (*treeArgs, error) {
	flags := pflag.NewFlagSet("kubectl convergo", pflag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Usage = func() {
		fmt.Fprint(stderr, usage)
		flags.PrintDefaults()
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	flags.StringVar(&rules.ExplicitPath, "kubeconfig", "", "path to the kubeconfig file")
	overrides := &clientcmd.ConfigOverrides{}
	clientcmd.BindOverrideFlags(overrides, flags, clientcmd.RecommendedConfigOverrideFlags(""))
	out := &treeArgs{}
	flags.StringVarP(&out.output, "output", "o", "", `output format: "json", or empty for a table`)
	flags.StringVar(&out.memberSecretsNamespace, "member-secrets-namespace", defaultMemberSecretsNamespace,
		"the hub namespace whose Secrets labelled convergo.dev/member-cluster name the member clusters to show (\"\" for none)")
	var members memberValues
	flags.Var(&members, "member", "show the member cluster NAME too, read with the kubeconfig file KUBECONFIG_PATH (repeatable; replaces a Secret naming NAME)")
	err := flags.Parse(args)
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, errHelp
		}
		return nil, err
	}
	rest := flags.Args()
	switch {
	case len(rest) == 0:
		flags.Usage()
		return nil, errors.New("no command: want tree")
	case rest[0] != "tree":
		return nil, fmt.Errorf("unknown command %q: want tree", rest[0])
	}
	switch rest = rest[1:]; {
	case len(rest) == 1 && strings.Count(rest[0], "/") == 1:
		out.resource, out.name, _ = strings.Cut(rest[0], "/")
	case len(rest) == 2 && !strings.Contains(rest[0], "/"):
		out.resource, out.name = rest[0], rest[1]
	default:
		return nil, fmt.Errorf("tree takes <resource>/<name> or <resource> <name>, got %q", strings.Join(rest, " "))
	}
	if out.resource == "" || out.name == "" {
		return nil, fmt.Errorf("tree takes <resource>/<name>, got %q", strings.Join(rest, " "))
	}
	if out.output != "" && out.output != "json" {
		return nil, fmt.Errorf("unknown output format %q: want json, or none for a table", out.output)
	}
	if out.members, err = parseMembers(members); err != nil {
		return nil, err
	}
	out.config = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	return out, nil
}

// run runs the command line args (without the program name), printing to stdout and stderr, and
// returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a, err := parseArgs(args, stderr)
	switch {
	case errors.Is(err, errHelp):
		return 0
	case err != nil:
		fmt.Fprintln(stderr, "error:", err)
		return 2
	}
	if err := tree(ctx, a, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	return 0
}

// tree prints the tree a asks for, with the children in member clusters.
func tree(ctx context.Context, a *treeArgs, stdout, stderr io.Writer) error {
	cfg, err := a.config.ClientConfig()
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	namespace, _, err := a.config.Namespace()
	if err != nil {
		return fmt.Errorf("load kubeconfig: namespace: %w", err)
	}
	c, err := newCluster(cfg, func(format string, args ...any) {
		fmt.Fprintf(stderr, "warning: "+format+"\n", args...)
	})
	if err != nil {
		return err
	}
	m, err := c.mapping(ctx, a.resource)
	if err != nil {
		return err
	}
	t, err := c.tree(ctx, m, namespace, a.name)
	if err != nil {
		return err
	}
	members := memberClusters(ctx, c, a.memberSecretsNamespace, a.members, cfg.Timeout)
	elsewhere, err := memberChildren(ctx, members, types.UID(t.Owner.UID), t.Owner.Namespace, c.warn)
	if err != nil {
		return err
	}
	if len(elsewhere) > 0 {
		t.Children = inGraphOrder(append(t.Children, elsewhere...))
	}
	if a.output == "json" {
		return printJSON(stdout, t)
	}
	return printTable(stdout, t)
}
