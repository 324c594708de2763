package cluster

import (
	"os"
	"time"

	"github.com/go-logr/logr"
)

// Component names a process of the local cluster. It is also the file name of the component's
// binary and, with ".log" appended, of its log file.
type Component string

// The components of a local cluster, in start order.
const (
	Etcd              Component = "etcd"
	APIServer         Component = "kube-apiserver"
	ControllerManager Component = "kube-controller-manager"
	Scheduler         Component = "kube-scheduler"
	Kwok              Component = "kwok"
)

// components lists every component in start order.
var components = []Component{Etcd, APIServer, ControllerManager, Scheduler, Kwok}

// StagesFile is the name of kwok's stage configuration (node-initialize, node heartbeat with lease,
// pod ready, pod complete, pod delete), expected next to the kwok binary unless WithStagesFile
// names another file.
const StagesFile = "kwok-stages.yaml"

// BinaryDirEnv is the environment variable naming the binary directory when WithBinaryDir is not
// given; it is the one envtest uses, so one directory serves both.
const BinaryDirEnv = "KUBEBUILDER_ASSETS"

// Defaults of the options.
const (
	DefaultNodes        = 3
	DefaultStartTimeout = 3 * time.Minute
	DefaultStopTimeout  = 15 * time.Second
)

// Option configures Start.
type Option func(*config)

type config struct {
	binaryDir    string
	nodes        int
	runDir       string
	stagesFile   string
	noScheduler  bool
	extraArgs    map[Component][]string
	logger       logr.Logger
	startTimeout time.Duration
	stopTimeout  time.Duration
}

func newConfig(opts []Option) config {
	cfg := config{
		binaryDir:    os.Getenv(BinaryDirEnv),
		nodes:        DefaultNodes,
		logger:       logr.Discard(),
		startTimeout: DefaultStartTimeout,
		stopTimeout:  DefaultStopTimeout,
		extraArgs:    map[Component][]string{},
	}
	for _, opt := range opts {
		opt(&cfg)
	}
	return cfg
}

// WithBinaryDir sets the directory holding kube-apiserver, etcd, kube-controller-manager,
// kube-scheduler, kwok and kwok-stages.yaml. Without it, $KUBEBUILDER_ASSETS is used.
func WithBinaryDir(dir string) Option {
	return func(c *config) { c.binaryDir = dir }
}

// WithNodes sets the number of fake kwok nodes (default 3). Zero starts a cluster without nodes,
// where pods stay Pending.
func WithNodes(n int) Option {
	return func(c *config) { c.nodes = n }
}

// WithRunDir sets the directory for PKI, kubeconfigs, etcd data and logs. It is created if needed
// and kept after Stop. Without it, a fresh temporary directory is used and removed by Stop.
func WithRunDir(dir string) Option {
	return func(c *config) { c.runDir = dir }
}

// WithStagesFile sets kwok's stage configuration file (default: kwok-stages.yaml in the binary
// directory).
func WithStagesFile(path string) Option {
	return func(c *config) { c.stagesFile = path }
}

// WithoutScheduler leaves kube-scheduler out: pods are never bound to nodes, which suits tests
// that only need the controller-manager (garbage collection, namespace deletion).
func WithoutScheduler() Option {
	return func(c *config) { c.noScheduler = true }
}

// WithExtraArgs appends command-line arguments for one component after the defaults; for a
// flag given twice, the later value wins.
func WithExtraArgs(component Component, args ...string) Option {
	return func(c *config) { c.extraArgs[component] = append(c.extraArgs[component], args...) }
}

// WithLogger sets the logger for progress messages (default: discard).
func WithLogger(logger logr.Logger) Option {
	return func(c *config) { c.logger = logger }
}

// WithStartTimeout bounds the whole start, in addition to the context given to Start
// (default 3 minutes; zero or less: only the context bounds it).
func WithStartTimeout(d time.Duration) Option {
	return func(c *config) { c.startTimeout = d }
}

// WithStopTimeout sets how long Stop waits for each component after SIGTERM before it sends
// SIGKILL (default 15 seconds).
func WithStopTimeout(d time.Duration) Option {
	return func(c *config) { c.stopTimeout = d }
}
