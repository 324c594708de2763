package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/convergo-dev/convergo/testing/cluster"
)

// WithServerProfiles writes CPU profiles of kube-apiserver, kube-controller-manager and kube-scheduler
// into dir for the converge, update and delete phases, where the cluster does the work: from the
// start of the phase until its goal (and, for delete, the garbage collector's end) is reached, as
// consecutive profiles of ServerProfileChunk each, <impl>-r<round>-<phase>-<component>-<k>.cpu.
// `go tool pprof` merges the files given together:
//
//	go tool pprof -top DIR/convergo-r1-update-kube-controller-manager-*.cpu
//
// The last profile of a phase runs on past its goal, into the quiet the phase waits for before it
// ends. Profiling costs the components a little CPU: compare runs made with the same flags.
func WithServerProfiles(dir string) Option { return func(c *config) { c.serverProfiles = dir } }

// ServerProfileChunk is how long each CPU profile of WithServerProfiles lasts.
const ServerProfileChunk = 10 * time.Second

// profiledComponents are the components WithServerProfiles profiles: those serving Go's profiler.
var profiledComponents = []cluster.Component{cluster.APIServer, cluster.ControllerManager, cluster.Scheduler}

// profiledPhases are the phases WithServerProfiles profiles. A restart lasts a fraction of a second,
// shorter than the shortest profile, and the cluster does little in it.
var profiledPhases = map[string]bool{"converge": true, "update": true, "delete": true}

// cpuProfileFunc records a CPU profile of a component for a duration (cluster.Cluster.CPUProfile).
type cpuProfileFunc func(ctx context.Context, comp cluster.Component, d time.Duration) ([]byte, error)

// serverProfiles records consecutive CPU profiles of each component until ended.
type serverProfiles struct {
	ended chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

// end lets no new profile start; those recording go on.
func (p *serverProfiles) end() { p.once.Do(func() { close(p.ended) }) }

// startServerProfiles starts recording profiles of comps, each of chunk, into dir as
// <prefix>-<component>-<k>.cpu (k from 1), until end is called; a component whose profile fails is
// logged and no longer profiled. wait returns once the profiles recording at end are written.
func startServerProfiles(ctx context.Context, profile cpuProfileFunc, comps []cluster.Component, chunk time.Duration, dir, prefix string, log logr.Logger) *serverProfiles {
	p := &serverProfiles{ended: make(chan struct{})}
	for _, comp := range comps {
		p.wg.Go(func() {
			for k := 1; ; k++ {
				select {
				case <-p.ended:
					return
				case <-ctx.Done():
					return
				default:
				}
				data, err := profile(ctx, comp, chunk)
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%s-%d.cpu", prefix, comp, k)), data, 0o644)
				}
				if err != nil {
					log.Error(err, "no more CPU profiles of this component in this phase", "component", comp)
					return
				}
			}
		})
	}
	return p
}

// wait ends the recording and returns once the profiles recording are written.
func (p *serverProfiles) wait() {
	p.end()
	p.wg.Wait()
}

// profileServers starts the CPU profiles of WithServerProfiles for the phase name, or returns nil
// when there are none to record: no directory, a phase not profiled, a cluster without processes.
func (r *run) profileServers(ctx context.Context, name string) *serverProfiles {
	c := r.env.Cluster()
	if r.cfg.serverProfiles == "" || !profiledPhases[name] || c == nil {
		return nil
	}
	prefix := fmt.Sprintf("%s-r%d-%s", r.impl.Name, r.round, name)
	return startServerProfiles(ctx, c.CPUProfile, profiledComponents, ServerProfileChunk, r.cfg.serverProfiles, prefix, r.log.WithValues("phase", name))
}
