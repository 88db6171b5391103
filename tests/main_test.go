package tests

import (
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/proc"
)

// TestMain removes what the run kept for all its tests (the clusters'
// seeds, the shared dev render) once they are done.
func TestMain(m *testing.M) { proc.Main(m) }
