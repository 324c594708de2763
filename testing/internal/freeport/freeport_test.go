package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestOn(t *testing.T) {
	port, err := On("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("the picked port %d cannot be bound: %v", port, err)
	}
	_ = l.Close()
	if _, err := On("203.0.113.1"); err == nil { // TEST-NET-3: not an address of this machine
		t.Error("a port on an address this machine does not have was picked")
	}
}
