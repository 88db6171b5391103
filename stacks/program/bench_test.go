package program

import (
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// BenchmarkLoad measures decoding, validating and resolving a realistic
// stack config into its plan:
// it runs on every preview, so it must stay far below the engine's cost.
func BenchmarkLoad(b *testing.B) {
	cfg, _, err := pulumitest.StackConfig("prod")
	if err != nil {
		b.Fatal(err)
	}
	raw := pulumitest.Unqualified(cfg)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := plan.Load(raw, "prod"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProgram measures one whole evaluation of the dev stack under mocks.
func BenchmarkProgram(b *testing.B) {
	cfg, secrets, err := pulumitest.StackConfig("dev")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pulumitest.Run(Program, config.Namespace, "dev", cfg, secrets); err != nil {
			b.Fatal(err)
		}
	}
}
