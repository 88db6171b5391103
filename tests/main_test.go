package tests

import (
	"os"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/proc"
)

// TestMain removes what the run kept for all its tests (the clusters'
// seeds) once they are done.
func TestMain(m *testing.M) {
	code := m.Run()
	proc.Cleanup()
	os.Exit(code)
}
