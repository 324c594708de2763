package harness

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// Partition stands between clients and an API server as a TCP relay on 127.0.0.1, which a test can
// cut (every connection closed, new ones refused, as when a member cluster's network goes) and mend
// (the same address serves again): what a member cluster that becomes unreachable and comes back
// looks like to an operator, without stopping the API server, whose certificates and users then stay
// valid. TLS passes through untouched.
//
//	p := harness.NewPartition(t, member.Config)
//	c, _ := cluster.New(p.Config())
//	p.Cut()  // requests fail: connection refused
//	p.Mend() // and succeed again
type Partition struct {
	target string
	cfg    *rest.Config
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	cut   bool
}

// NewPartition starts a relay to cfg's API server, closed when the test ends.
func NewPartition(t testing.TB, cfg *rest.Config) *Partition {
	t.Helper()
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatalf("partition: API server address %q: %v", cfg.Host, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("partition: listen: %v", err)
	}
	p := &Partition{target: u.Host, cfg: cfg, addr: ln.Addr().String(), conns: map[net.Conn]bool{}}
	p.serve(ln)
	t.Cleanup(p.Cut)
	return p
}

// Config returns a copy of the API server's config that goes through the relay.
func (p *Partition) Config() *rest.Config {
	cfg := rest.CopyConfig(p.cfg)
	cfg.Host = "https://" + p.addr
	if cfg.TLSClientConfig.ServerName == "" {
		cfg.TLSClientConfig.ServerName = "127.0.0.1"
	}
	return cfg
}

// Cut closes every connection through the relay and refuses new ones until Mend.
func (p *Partition) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return
	}
	p.cut = true
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Mend serves the relay's address again after Cut.
func (p *Partition) Mend() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cut {
		return nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("partition: listen on %s again: %w", p.addr, err)
	}
	p.cut = false
	p.serveLocked(ln)
	return nil
}

func (p *Partition) serve(ln net.Listener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.serveLocked(ln)
}

func (p *Partition) serveLocked(ln net.Listener) {
	p.ln = ln
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return // closed by Cut
			}
			go p.relay(in)
		}
	}()
}

// relay copies one connection both ways until either side closes or the relay is cut.
func (p *Partition) relay(in net.Conn) {
	out, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = in.Close()
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		_ = in.Close()
		_ = out.Close()
		return
	}
	p.conns[in], p.conns[out] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src) // ends when either side, or Cut, closes a connection
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	_ = in.Close()
	_ = out.Close()
	p.mu.Lock()
	delete(p.conns, in)
	delete(p.conns, out)
	p.mu.Unlock()
}
