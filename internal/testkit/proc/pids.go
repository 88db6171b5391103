package proc

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Every process a test starts is saved as <runDir>/<test pid>/<name>.pid
// holding "<pid> <binary>". A test binary that dies without running its
// cleanups (a -timeout panic, a kill) leaves them behind; the next Start
// stops those processes by their saved pids.
func runDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("gpu-node-pools-kubeapi-%d", os.Getuid()))
}

func savePid(t testing.TB, name string, pid int, bin string) string {
	t.Helper()
	f := filepath.Join(RunDir(), fmt.Sprintf("%s-%d.pid", name, pid))
	if err := os.WriteFile(f, []byte(fmt.Sprintf("%d %s", pid, bin)), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// reapStale stops the processes of test runs that are gone.
func reapStale() {
	runs, _ := os.ReadDir(runDir())
	for _, run := range runs {
		owner, err := strconv.Atoi(run.Name())
		if err != nil || owner == os.Getpid() || alive(owner) {
			continue
		}
		dir := filepath.Join(runDir(), run.Name())
		files, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			pidStr, bin, _ := strings.Cut(string(b), " ")
			pid, err := strconv.Atoi(pidStr)
			// Only if the pid still runs our binary: pids get reused.
			if err == nil && bin != "" && runsBinary(pid, bin) {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
		_ = os.RemoveAll(dir)
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func runsBinary(pid int, bin string) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && exe == bin
}

// RunDir is this test process's own directory for what outlives a test
// (a cluster seed, say): removed by the first start after the process is
// gone, or by Cleanup.
func RunDir() string {
	dir := ownRunDir()
	_ = os.MkdirAll(dir, 0o700)
	return dir
}

func ownRunDir() string { return filepath.Join(runDir(), strconv.Itoa(os.Getpid())) }

// Cleanup removes RunDir; a TestMain calls it after m.Run.
func Cleanup() { _ = os.RemoveAll(ownRunDir()) }

// Main runs a package's tests and then Cleanup: a TestMain for packages
// whose tests keep something in RunDir.
func Main(m interface{ Run() int }) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}
