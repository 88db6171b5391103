package automation

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/natron/gpu-node-pools/stacks/config"
)

// The engine's settings fill what the stack leaves open, and relative
// paths start at the project, not at the caller's working directory.
func TestEngineResolvesPathsAndCharts(t *testing.T) {
	t.Parallel()
	type paths struct{ Render, Charts string }
	for _, tc := range []struct {
		name string
		e    Engine
		cfg  paths
		want paths
	}{
		{"nothing set", Engine{}, paths{"rendered", ""}, paths{"rendered", ""}},
		{"from the project", Engine{ProjectDir: "/srv/fleet"}, paths{"rendered-acme", "charts"}, paths{"/srv/fleet/rendered-acme", "/srv/fleet/charts"}},
		{"absolute stays", Engine{ProjectDir: "/srv/fleet"}, paths{"/tmp/out", "/opt/charts"}, paths{"/tmp/out", "/opt/charts"}},
		{"the engine's chart directory", Engine{ChartDir: "/opt/charts", Env: map[string]string{"GPU_NODE_POOLS_CHART_DIR": "/env/charts"}}, paths{"", ""}, paths{"", "/opt/charts"}},
		{"Env's chart directory", Engine{Env: map[string]string{"GPU_NODE_POOLS_CHART_DIR": "/env/charts"}}, paths{"", ""}, paths{"", "/env/charts"}},
		{"the stack's wins", Engine{ChartDir: "/opt/charts"}, paths{"", "/stack/charts"}, paths{"", "/stack/charts"}},
	} {
		cfg := &config.Config{RenderDir: tc.cfg.Render}
		cfg.Platform.ChartDir = tc.cfg.Charts
		got := tc.e.resolve(cfg)
		if d := cmp.Diff(tc.want, paths{got.RenderDir, got.Platform.ChartDir}); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
		if cfg.RenderDir != tc.cfg.Render || cfg.Platform.ChartDir != tc.cfg.Charts {
			t.Errorf("%s: the caller's config was changed", tc.name)
		}
	}
}
