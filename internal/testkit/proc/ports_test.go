package proc

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// listenEnv makes this test binary a server on the port it names (and
// nothing else): the process Serve starts in the tests.
const listenEnv = "PROC_TEST_LISTEN"

func TestMain(m *testing.M) {
	if port := os.Getenv(listenEnv); port != "" {
		l, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			fmt.Println(err) // "listen tcp ...: bind: address already in use"
			os.Exit(1)
		}
		for {
			c, err := l.Accept()
			if err == nil {
				c.Close()
			}
		}
	}
	os.Exit(m.Run())
}

// A port taken between Serve's choice and the server's bind (as a
// kubectl's connection took an API server's) costs a restart on another
// port, not the test.
func TestServeStartsAgainWhenAPortWasTaken(t *testing.T) {
	var stolen []net.Listener
	t.Cleanup(func() {
		for _, l := range stolen {
			l.Close()
		}
	})
	attempts := 0
	p, ports := Serve(t, Server{Dir: t.TempDir(), Name: "listener", Bin: os.Args[0], Ports: 1,
		Args: func(ports []int) []string {
			attempts++
			if attempts == 1 { // someone else binds it first
				l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(ports[0]))
				if err != nil {
					t.Fatal(err)
				}
				stolen = append(stolen, l)
			}
			os.Setenv(listenEnv, strconv.Itoa(ports[0])) // read by Start's os.Environ
			return []string{"-test.run", "^$"}
		},
		Ready: Listening, Timeout: 10 * time.Second})
	os.Unsetenv(listenEnv)
	if attempts != 2 {
		t.Errorf("started %d times, want 2 (once more after the taken port)", attempts)
	}
	if p.Exited() {
		t.Errorf("the server is not running:\n%s", p.Log(1000))
	}
	if ports[0] == stolen[0].Addr().(*net.TCPAddr).Port {
		t.Errorf("served on the taken port %d", ports[0])
	}
}

// A server that fails for another reason fails the test with its log, at
// once: no retry hides it.
func TestServeFailsOnOtherExits(t *testing.T) {
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Serve(ft, Server{Dir: t.TempDir(), Name: "false", Bin: "/bin/false", Ports: 1,
			Args: func([]int) []string { return nil }, Ready: Listening, Timeout: 10 * time.Second})
	}()
	<-done
	if !ft.failed {
		t.Fatal("Serve returned for a server that exited")
	}
}

// A server still running when it is not ready in time fails the test,
// even when its log mentions a taken port: Serve starts again only a
// server that ended.
func TestServeFailsWhenNotReadyWhileRunning(t *testing.T) {
	ft := &fakeT{TB: t}
	starts := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		Serve(ft, Server{Dir: t.TempDir(), Name: "stuck", Bin: "/bin/sh", Ports: 1,
			Args: func([]int) []string {
				starts++
				return []string{"-c", "echo 'some peer: address already in use'; exec sleep 60"}
			},
			Ready: func([]int) error { return fmt.Errorf("never") }, Timeout: time.Second})
	}()
	<-done
	if !ft.failed {
		t.Fatal("Serve returned for a server that was never ready")
	}
	if starts != 1 {
		t.Errorf("started %d times, want once: it did not end on a taken port", starts)
	}
}

// Ports are distinct and below the ephemeral range.
func TestPortsAreBelowTheEphemeralRange(t *testing.T) {
	ports, err := Ports(50)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	top := ephemeralStart()
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d twice", p)
		}
		seen[p] = true
		if p < lowestPort || p >= top {
			t.Errorf("port %d outside [%d, %d)", p, lowestPort, top)
		}
	}
}

// fakeT records a fatal failure instead of ending the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = true
	f.TB.Logf("(expected) "+format, args...)
	runtimeGoexit()
}

func (f *fakeT) Fatal(args ...any) {
	f.failed = true
	runtimeGoexit()
}

func runtimeGoexit() { runtime.Goexit() }
