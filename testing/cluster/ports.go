package cluster

import (
	"fmt"
	"net"
	"strconv"
)

// portReservation holds a free port on 127.0.0.1 by keeping a listener open on it until the
// component that will use the port is about to start. The kernel does not hand out a port that is
// in use, so holding the listener keeps other test packages from picking the same port meanwhile.
type portReservation struct {
	port     int
	listener net.Listener
}

// reservePort finds a free port on 127.0.0.1 and holds it.
func reservePort() (*portReservation, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("reserve a free port on 127.0.0.1: %w", err)
	}
	return &portReservation{port: l.Addr().(*net.TCPAddr).Port, listener: l}, nil
}

// release frees the port for the component. It is safe to call more than once.
func (r *portReservation) release() {
	if r != nil && r.listener != nil {
		r.listener.Close()
		r.listener = nil
	}
}

// addr is "127.0.0.1:<port>".
func (r *portReservation) addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port))
}

// ports are the ports of one start attempt.
type ports struct {
	etcdClient, etcdPeer, apiServer, controllerManager, scheduler, kwok *portReservation
}

// reservePorts reserves every port of the control plane.
func reservePorts() (*ports, error) {
	p := &ports{}
	for _, dst := range p.all() {
		r, err := reservePort()
		if err != nil {
			p.releaseAll()
			return nil, err
		}
		*dst = r
	}
	return p, nil
}

func (p *ports) all() []**portReservation {
	return []**portReservation{&p.etcdClient, &p.etcdPeer, &p.apiServer, &p.controllerManager, &p.scheduler, &p.kwok}
}

func (p *ports) releaseAll() {
	for _, r := range p.all() {
		(*r).release()
	}
}

// numbers returns the port numbers, for checks after a stop.
func (p *ports) numbers() []int {
	var out []int
	for _, r := range p.all() {
		if *r != nil {
			out = append(out, (*r).port)
		}
	}
	return out
}
