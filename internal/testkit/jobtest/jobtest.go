// Package jobtest runs a Job's shell script as its image would: in
// BusyBox's sh with BusyBox's applets and nothing else of this machine on
// the PATH (the rclone image is Alpine's, whose shell and tools are
// BusyBox's), beside the real rclone built from its Go module.
package jobtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// RcloneEnv names the directory of the rclone that .ci/toolchain/rclone.sh
// builds (make test sets it).
const RcloneEnv = "GPU_NODE_POOLS_RCLONE_BIN"

// Shell is a BusyBox userland with rclone.
type Shell struct {
	bin string
}

// New is the userland, or skips (fails under strict mode) naming what is
// missing.
func New(t *testing.T) *Shell {
	t.Helper()
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		pulumitest.Missing(t, "the Job scripts run in BusyBox, which this machine lacks: apt-get install busybox (.ci/run installs it)")
	}
	rclone := filepath.Join(os.Getenv(RcloneEnv), "rclone")
	if _, err := os.Stat(rclone); os.Getenv(RcloneEnv) == "" || err != nil {
		pulumitest.Missing(t, "the weight download runs the real rclone: set %s (make test builds it with .ci/toolchain/rclone.sh)", RcloneEnv)
	}
	bin := t.TempDir()
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		t.Fatalf("busybox --list: %v", err)
	}
	for _, applet := range strings.Fields(string(out)) {
		if err := os.Symlink(busybox, filepath.Join(bin, applet)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(rclone, filepath.Join(bin, "rclone")); err != nil {
		t.Fatal(err)
	}
	return &Shell{bin: bin}
}

// Run runs script in dir with env (and PATH, HOME and the rclone remote
// "src" as a local directory tree, paths relative to dir), and is its
// combined output.
func (s *Shell) Run(dir, script string, env ...string) (string, error) {
	cmd := exec.Command(filepath.Join(s.bin, "sh"), "-c", script)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + s.bin, "HOME=" + dir, "RCLONE_CONFIG_SRC_TYPE=local"}, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
