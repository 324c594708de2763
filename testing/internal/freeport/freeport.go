// Package freeport picks TCP ports for the servers the test kit starts.
//
//	port, err := freeport.On("127.0.0.1")
//	// start the server on port; if it finds the port taken meanwhile, pick another
package freeport

import (
	"fmt"
	"net"
)

// On returns a TCP port on host that was free a moment ago: another process may take it before the
// caller's server binds it, so callers try again with another on "address already in use".
func On(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("pick a free port on %s: %w", host, err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("release the picked port %d: %w", port, err)
	}
	return port, nil
}
