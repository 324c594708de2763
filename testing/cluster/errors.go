package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// buildCommand builds every binary the cluster needs.
const buildCommand = "go run github.com/convergo-dev/convergo/testing/assets/cmd/convergo-assets -components all"

// MissingBinariesError reports that the binary directory is not set or lacks files the cluster
// needs. Callers may branch on it with errors.As, for example to explain how to build the binaries.
type MissingBinariesError struct {
	// Dir is the directory searched; empty when neither WithBinaryDir nor KUBEBUILDER_ASSETS was set.
	Dir string
	// Missing lists the missing files: binary names, or the stages file's path.
	Missing []string
}

// Error names what is missing and the command that builds it.
func (e *MissingBinariesError) Error() string {
	fix := fmt.Sprintf("build them with: %s, and set %s (or use cluster.WithBinaryDir) to the directory holding them",
		buildCommand, BinaryDirEnv)
	if e.Dir == "" {
		return fmt.Sprintf("no control-plane binary directory: %s is not set and cluster.WithBinaryDir was not given; %s",
			BinaryDirEnv, fix)
	}
	return fmt.Sprintf("control-plane binaries missing in %s: %s; %s", e.Dir, strings.Join(e.Missing, ", "), fix)
}

// StartError reports the component that kept the cluster from starting, with the tail of its log.
type StartError struct {
	// Component is the component that failed: it exited, never became ready, or (for Kwok) did not
	// make the nodes Ready, or (for ControllerManager) did not create the default ServiceAccount.
	Component Component
	// Err is the cause.
	Err error
	// LogTail holds the last lines of the component's log, "==> name.log <==" first.
	LogTail string
}

// Error names the component and the cause, followed by the log tail.
func (e *StartError) Error() string {
	return fmt.Sprintf("start %s: %v\n%s", e.Component, e.Err, e.LogTail)
}

// Unwrap returns the cause.
func (e *StartError) Unwrap() error { return e.Err }

// binaries are the resolved paths of everything Start executes or reads from the binary directory.
type binaries struct {
	paths      map[Component]string
	stagesFile string
}

// locateBinaries checks that every binary the configuration needs, and kwok's stages file, exist.
func (c *config) locateBinaries() (binaries, error) {
	if c.binaryDir == "" {
		return binaries{}, &MissingBinariesError{}
	}
	b := binaries{paths: map[Component]string{}, stagesFile: c.stagesFile}
	var missing []string
	for _, comp := range c.components() {
		path := filepath.Join(c.binaryDir, string(comp))
		if !isExecutable(path) {
			missing = append(missing, string(comp))
			continue
		}
		b.paths[comp] = path
	}
	if b.stagesFile == "" {
		b.stagesFile = filepath.Join(c.binaryDir, StagesFile)
		if !isRegular(b.stagesFile) {
			missing = append(missing, StagesFile)
		}
	} else if !isRegular(b.stagesFile) {
		missing = append(missing, b.stagesFile)
	}
	if len(missing) > 0 {
		return binaries{}, &MissingBinariesError{Dir: c.binaryDir, Missing: missing}
	}
	return b, nil
}

// components lists the components this configuration runs, in start order.
func (c *config) components() []Component {
	var out []Component
	for _, comp := range components {
		if comp == Scheduler && c.noScheduler {
			continue
		}
		out = append(out, comp)
	}
	return out
}

func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0
}

func isRegular(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}
