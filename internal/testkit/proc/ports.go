package proc

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// A port chosen free and released is open to anyone until the server
// binds it, and the kernel hands out ports of its ephemeral range as the
// source of every outgoing connection: a strict run lost an API server to
// a kubectl's connection that way ("bind: address already in use").
// Servers therefore get ports below that range, which only an explicit
// bind takes, and Serve starts one again on others when even so a port
// was taken.

// lowestPort keeps clear of the well-known and registered ports most
// local services use.
const lowestPort = 10000

// ephemeralStart is where the kernel's ephemeral range starts.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		var lo, hi int
		if _, err := fmt.Sscan(string(b), &lo, &hi); err == nil {
			return lo
		}
	}
	return 32768 // Linux's default
}

// Ports are n distinct loopback ports, each free when chosen, below the
// kernel's ephemeral range where it leaves room (in it otherwise).
func Ports(n int) ([]int, error) {
	top := ephemeralStart()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	var ports []int
	for attempts := 0; len(ports) < n; attempts++ {
		addr := "127.0.0.1:0"
		if top-lowestPort > 1000 && attempts < 1000 {
			addr = fmt.Sprintf("127.0.0.1:%d", lowestPort+rand.IntN(top-lowestPort))
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			if attempts < 1000 {
				continue // taken: another
			}
			return nil, err
		}
		held = append(held, l) // held until all are chosen: n distinct
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Server is how Serve starts a server that must be told its ports.
type Server struct {
	Dir, Name, Bin string
	Env            []string
	Ports          int // how many it binds
	Args           func(ports []int) []string
	// Ready says whether the server answers on its ports (nil when it
	// does); Serve asks until Timeout.
	Ready   func(ports []int) error
	Timeout time.Duration
}

// bindFailures are how the servers we start say a port was taken (Go's
// net package, Node.js).
var bindFailures = []string{"address already in use", "EADDRINUSE"}

// Serve starts s on free ports and waits until it is ready; a server that
// exits because a port was taken after all is started again on others
// (up to five times). It fails the test, with the log's end, when the
// server exits otherwise or is not ready in time.
func Serve(t testing.TB, s Server) (*Process, []int) {
	t.Helper()
	if s.Timeout == 0 {
		s.Timeout = time.Minute
	}
	for attempt := 1; ; attempt++ {
		ports, err := Ports(s.Ports)
		if err != nil {
			t.Fatalf("%s: no free ports: %v", s.Name, err)
		}
		p := Start(t, s.Dir, s.Name, s.Bin, s.Env, s.Args(ports)...)
		err = waitReady(p, ports, s)
		if err == nil {
			return p, ports
		}
		// only a server that ended on its own lost a port: one still
		// running when it was not ready in time is a failure, whatever
		// its log says
		exited, log := p.Exited(), p.Log(4000)
		p.Stop()
		if exited && bindFailed(log) && attempt < 5 {
			t.Logf("%s: a port was taken before it bound %v; starting it on others", s.Name, ports)
			continue
		}
		t.Fatalf("%s: %v; log tail:\n%s", s.Name, err, log)
	}
}

func waitReady(p *Process, ports []int, s Server) error {
	deadline := time.Now().Add(s.Timeout)
	for {
		// our process on every port, then answering: an answer alone may
		// come from whoever took a port first
		bound, err := listening(p.pid, ports)
		if err == nil && !bound {
			err = fmt.Errorf("not listening on %v", ports)
		}
		if err == nil {
			err = s.Ready(ports)
		}
		if err == nil {
			return nil
		}
		if p.Exited() {
			return fmt.Errorf("exited: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within %s: %w", s.Timeout, err)
		}
		select {
		case <-p.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func bindFailed(log string) bool {
	for _, f := range bindFailures {
		if strings.Contains(log, f) {
			return true
		}
	}
	return false
}

// Listening is a Ready that dials each port.
func Listening(ports []int) error {
	for _, port := range ports {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err != nil {
			return err
		}
		c.Close()
	}
	return nil
}
