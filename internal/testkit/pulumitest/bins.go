package pulumitest

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/proc"
)

// copyBins are what a copy's make targets install into .pulumi-state/bin,
// by binary name: the program (.ci/program.sh) and stackctl (make preview,
// make destroy), each with its package.
var copyBins = map[string]string{"gpu-node-pools": ".", "stackctl": "./cmd/stackctl"}

// installOnce installs them from the checkout once per test process, with
// the copies' GOFLAGS.
var installOnce = sync.OnceValues(func() (string, error) {
	dir := filepath.Join(proc.RunDir(), "copy-bin")
	cmd := exec.Command("go", append([]string{"install"}, slices.Sorted(maps.Values(copyBins))...)...)
	cmd.Dir = RepoRoot()
	// no VCS stamp: a copy has no .git, and the stamp would make the
	// checkout's build differ from every copy's
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS="+CopyGOFLAGS()+" -mod=readonly -buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", errors.Join(err, errors.New(string(out)))
	}
	return dir, nil
})

// InstalledBin is the path of one of the binaries every copy starts with
// (gpu-node-pools or stackctl).
func InstalledBin(t testing.TB, name string) string {
	t.Helper()
	src, err := installOnce()
	if err != nil {
		t.Fatalf("go install of the program and stackctl: %v", err)
	}
	return filepath.Join(src, name)
}

// seedBins links the binaries installed once into a copy's
// .pulumi-state/bin. The copy's own go install then finds them up to date
// (the same sources build to the same build ID under -trimpath) and links
// nothing, where every copy linked both again (about 10 s of CPU each). A
// copy whose sources differ still gets its own: go install writes a new
// file in place of the link, never into the shared one. Both are the go
// command's rules (Go 1.26.8, src/cmd/go/internal/work): exec.go's
// BuildInstallFunc only touches a target already up to date, and
// shell.go's moveOrCopyFile renames the new binary over the target or,
// failing that, removes the target before it creates the file anew.
func seedBins(t testing.TB, dst string) {
	t.Helper()
	bin := filepath.Join(dst, ".pulumi-state", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for b := range copyBins {
		src := InstalledBin(t, b)
		switch err := os.Link(src, filepath.Join(bin, b)); {
		case errors.Is(err, syscall.EXDEV): // the copy is on another file system
			copyFile(t, src, filepath.Join(bin, b))
		case err != nil:
			t.Fatal(err)
		}
	}
}
