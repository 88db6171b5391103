package stacks

import (
	"testing"

	"github.com/natron/gpu-node-pools/tests/pulumitest"
)

// BenchmarkLoad measures decoding and validating a realistic stack config:
// it runs on every preview, so it must stay far below the engine's cost.
func BenchmarkLoad(b *testing.B) {
	cfg, _, err := pulumitest.StackConfig("prod")
	if err != nil {
		b.Fatal(err)
	}
	raw := pulumitest.Unqualified(cfg)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(raw); err != nil {
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
		if _, err := pulumitest.Run(Program, Namespace, "dev", cfg, secrets); err != nil {
			b.Fatal(err)
		}
	}
}
