package probe

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestTCPWaitsForAListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := TCP(ctx, port); err != nil {
		t.Errorf("TCP with a listener: %v", err)
	}
	ln.Close()
	short, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if err := TCP(short, port); err == nil {
		t.Error("TCP with no listener returned nil")
	}
	if err := TCP(ctx, 0); err == nil {
		t.Error("port 0 accepted")
	}
}
