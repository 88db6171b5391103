// Package proc runs the servers and controllers the test kits start (API
// servers, etcd, Azurite, operators) as processes of their own: each in
// its own process group, its output in a log file, stopped when the test
// ends and, should the test binary die first, by the next start. Servers
// that must be told their port get one that nothing else takes in the
// meantime, or are started again on another (Serve).
package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Process is a running process.
type Process struct {
	Name string
	pid  int // also its process group's
	log  string
	done chan struct{}
}

// Start runs bin with args in dir's <name>.log, in its own process group,
// with env added to ours, and stops it (SIGTERM, then SIGKILL after 10 s)
// when the test ends.
func Start(t testing.TB, dir, name, bin string, env []string, args ...string) *Process {
	t.Helper()
	reapStale()
	logPath := filepath.Join(dir, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &Process{Name: name, pid: cmd.Process.Pid, log: logPath, done: make(chan struct{})}
	pidFile := savePid(t, name, p.pid, bin)
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		defer os.Remove(pidFile)
		p.Stop()
	})
	return p
}

// Stop stops the process and everything it started, and waits for it.
func (p *Process) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		<-p.done
	}
}

// Exited says whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed when the process ends.
func (p *Process) Done() <-chan struct{} { return p.done }

// Log is the end of the process's output, at most n bytes.
func (p *Process) Log(n int) string {
	b, _ := os.ReadFile(p.log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
