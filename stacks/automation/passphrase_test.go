package automation_test

import (
	"context"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/automation"
)

// Through the Automation API as through make preview, only the dev stack
// may use the README's passphrase: a customer's stack without one of its
// own is refused before the engine creates it (no CLI is needed to see
// that: the refusal comes first).
func TestOpenStackRefusesTheDevelopmentPassphrase(t *testing.T) {
	t.Setenv("PULUMI_CONFIG_PASSPHRASE", "")
	t.Setenv("PULUMI_CONFIG_PASSPHRASE_FILE", "")
	cfg := stacktest.Config(t, "dev")
	for _, tc := range []struct {
		name string
		e    automation.Engine
		want string
	}{
		{"no passphrase", automation.Engine{}, "stack acme: no passphrase for its secrets"},
		{"the development one", automation.Engine{Env: map[string]string{"PULUMI_CONFIG_PASSPHRASE": "gpu-node-pools-dev"}}, "the development passphrase from the README"},
	} {
		tc.e.PulumiRoot = t.TempDir() // no CLI there: the refusal must come before it is looked for
		_, err := automation.OpenStack(context.Background(), "acme", cfg, tc.e)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// its own passphrase passes the check, and the next step (the CLI) fails
	e := automation.Engine{PulumiRoot: t.TempDir(), Env: map[string]string{"PULUMI_CONFIG_PASSPHRASE": "acme's own"}}
	if _, err := automation.OpenStack(context.Background(), "acme", cfg, e); err == nil || strings.Contains(err.Error(), "passphrase") {
		t.Errorf("a passphrase of its own: %v", err)
	}
}
