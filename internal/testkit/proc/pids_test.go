package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// A process left behind by a test run that died is stopped by its saved
// pid; one whose pid now runs another binary is left alone.
func TestReapStaleStopsOrphans(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	if sleep, err = filepath.EvalSymlinks(sleep); err != nil {
		t.Fatal(err)
	}
	orphan := exec.Command(sleep, "300")
	orphan.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- orphan.Wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-orphan.Process.Pid, syscall.SIGKILL) })

	// A finished process's pid stands for the test run that died.
	dead := exec.Command(sleep, "0")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(runDir(), strconv.Itoa(dead.Process.Pid))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name string, pid int, bin string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(fmt.Sprintf("%d %s", pid, bin)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("etcd-1.pid", orphan.Process.Pid, sleep)
	// pid reused by another program (this test): reaping it would kill us
	write("kube-apiserver-2.pid", os.Getpid(), "/not/this/binary")

	reapStale()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the orphan still runs after reapStale")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the dead run's pid directory is still there: %v", err)
	}
}
