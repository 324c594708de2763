package localweb

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/convergo-dev/convergo/builders"
)

// Site keeps a local web server in step with the Deployment the Welcome operator renders for one
// Welcome: see Sync. It is not safe for concurrent use.
type Site struct {
	r      client.Reader
	key    types.NamespacedName
	binary string
	opts   []Option
	pin    bool // WithPort(0): keep the port picked at the first start
	proc   *Process
}

// NewSite returns a Site for the Deployment key (the Welcome's namespace and name), running binary
// (built by Build) with opts. Nothing runs until the first Sync.
func NewSite(r client.Reader, key types.NamespacedName, binary string, opts ...Option) *Site {
	var set settings
	for _, o := range opts {
		o(&set)
	}
	return &Site{r: r, key: key, binary: binary, opts: opts, pin: set.port != nil && *set.port == 0}
}

// Sync brings the local server in step with the live Deployment. Once the Deployment has finished
// rolling out (builders.DeploymentAvailable), it resolves the web container's configuration and, when
// no server runs, the server has exited, or the configuration differs from the one the server runs
// with, stops the server and starts one with the new configuration, on the same local port as before;
// then it reports started. Otherwise it leaves the server as it is and says why in reason: a rollout in
// progress, or nothing changed.
func (s *Site) Sync(ctx context.Context) (started bool, reason string, err error) {
	var dep appsv1.Deployment
	if err := s.r.Get(ctx, s.key, &dep); err != nil {
		return false, "", fmt.Errorf("get the web server's deployment %s: %w", s.key, err)
	}
	if ok, why := builders.DeploymentAvailable(&dep); !ok {
		return false, "deployment " + s.key.String() + " is rolling out: " + why, nil
	}
	cfg, err := Resolve(ctx, s.r, &dep, ContainerName)
	if err != nil {
		return false, "", err
	}
	if s.proc != nil {
		select {
		case <-s.proc.Done():
		default:
			if reflect.DeepEqual(cfg, s.proc.Config) {
				return false, "the configuration has not changed", nil
			}
		}
		// A server that had exited is replaced all the same; its error is in its log.
		_ = s.proc.Stop()
		s.proc = nil
	}
	proc, err := Start(ctx, s.binary, cfg, s.opts...)
	if err != nil {
		return false, "", err
	}
	s.proc = proc
	if s.pin { // the URL stays across restarts
		s.opts, s.pin = append(slices.Clip(s.opts), WithPort(proc.Port)), false
	}
	return true, "", nil
}

// Process returns the running server, or nil before the first successful Sync.
func (s *Site) Process() *Process { return s.proc }

// Stop stops the server, if one runs.
func (s *Site) Stop() error {
	if s.proc == nil {
		return nil
	}
	err := s.proc.Stop()
	s.proc = nil
	return err
}
