package main

import (
	"net"
	"time"
)

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func netDial(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, time.Second) }
