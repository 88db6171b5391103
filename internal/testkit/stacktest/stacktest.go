// Package stacktest loads the real stack files as the program's typed
// config, for the whole-program tests (components use fixtures of their
// own).
package stacktest

import (
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// Config is Pulumi.<stack>.yaml decoded, checked as the program checks it
// (secure values are pulumitest.SecretMarker).
func Config(t testing.TB, stack string) *config.Config {
	t.Helper()
	raw, _, err := pulumitest.StackConfig(stack)
	if err != nil {
		t.Fatal(err)
	}
	unqualified := pulumitest.Unqualified(raw)
	if _, err := plan.Load(unqualified, stack); err != nil {
		t.Fatal(err)
	}
	cfg, _, errs := config.Decode(unqualified)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return cfg
}
