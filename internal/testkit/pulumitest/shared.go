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
		Missing(t, "shared test assets not found at %s; set %s to a directory holding the upstream crds/ and charts/", dir, SharedEnv)
	}
	return dir
}

// StrictEnv, set by .ci/run, turns a missing prerequisite into a failure
// so that our CI never passes by skipping. Elsewhere (a user's clone, a
// GitHub runner without the shared assets) such tests skip and say why.
const StrictEnv = "GPU_NODE_POOLS_STRICT"

// Missing skips a test whose prerequisite is absent, saying what to
// provide; under StrictEnv it fails instead.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(StrictEnv) != "" {
		t.Fatalf(format, args...)
	}
	t.Skipf("skipping: "+format, args...)
}
