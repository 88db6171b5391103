package precheck_test

import (
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/plan"
	"github.com/natron/gpu-node-pools/stacks/precheck"
)

func load(t *testing.T, stack string, mutate func(raw map[string]string)) *plan.Plan {
	t.Helper()
	cfg, _, err := pulumitest.StackConfig(stack)
	if err != nil {
		t.Fatal(err)
	}
	raw := pulumitest.Unqualified(cfg)
	if mutate != nil {
		mutate(raw)
	}
	p, err := plan.Load(raw, stack)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The plugins a stack needs are named with what to do, only when missing.
func TestPlugins(t *testing.T) {
	t.Parallel()
	none := func(string, string) bool { return false }
	all := func(string, string) bool { return true }
	withoutKey := func(raw map[string]string) { raw["serving"] = "{}" }
	tests := []struct {
		name      string
		p         *plan.Plan
		installed precheck.Installed
		want      []string
	}{
		{"dev brings its key", load(t, "dev", nil), none, nil},
		{"dev without a key", load(t, "dev", withoutKey), none, []string{"gpu-node-pools:serving.apiKey: not set and the random provider plugin is not installed"}},
		{"dev without a key, random installed", load(t, "dev", withoutKey), all, nil},
		{"prod on a bare machine", load(t, "prod", nil), none, []string{
			"gpu-node-pools:serving.apiKey: not set", "gpu-node-pools:target: aks needs the azure-native provider plugin 2.82.0; on a machine with internet access: pulumi plugin install resource azure-native 2.82.0"}},
		{"prod with its plugins", load(t, "prod", nil), all, nil},
	}
	for _, tt := range tests {
		got := precheck.Plugins(tt.p, tt.installed)
		if len(got) != len(tt.want) {
			t.Errorf("%s: %q, want %d problems", tt.name, got, len(tt.want))
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tt.want[i]) {
				t.Errorf("%s: %q, want prefix %q", tt.name, got[i], tt.want[i])
			}
		}
	}
}
