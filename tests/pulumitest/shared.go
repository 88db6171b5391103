package pulumitest

import (
	"os"
	"path/filepath"
	"testing"
)

// SharedEnv names the directory of shared test assets (upstream charts,
// CRDs, reference data). It defaults to ../shared beside the project root.
const SharedEnv = "GPU_NODE_POOLS_SHARED"

// SharedDir returns the shared assets directory, or skips the test saying
// what to provide when it is missing.
func SharedDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(SharedEnv)
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "..", "shared")
	}
	if _, err := os.Stat(filepath.Join(dir, "crds")); err != nil {
		missing(t, "shared test assets not found at %s; set %s to a directory holding the upstream crds/ and charts/", dir, SharedEnv)
	}
	return dir
}

// missing skips a test whose prerequisite is absent, saying what to
// provide; in CI (CI set) the same is a failure, so nothing is silently
// left untested there.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format, args...)
	}
	t.Skipf("skipping: "+format, args...)
}
