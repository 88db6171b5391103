// Package stacktest loads the real stack files as the program's typed config,
// for tests outside the stacks package.
package stacktest

import (
	"testing"

	"github.com/natron/gpu-node-pools/stacks"
	"github.com/natron/gpu-node-pools/tests/pulumitest"
)

// Config is Pulumi.<stack>.yaml decoded and validated by stacks.Load.
func Config(t testing.TB, stack string) *stacks.Config {
	t.Helper()
	raw, _, err := pulumitest.StackConfig(stack)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := stacks.Load(pulumitest.Unqualified(raw))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
