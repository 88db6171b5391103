package config_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// The Automation API writes every block of a typed config, so an inline
// stack sees exactly what a stack file would give it.
func TestConfigMapRoundTrip(t *testing.T) {
	t.Parallel()
	c := stacktest.ServingNatron() // every block set
	c["serving"] = map[string]any{"apiKey": "k-0123456789abcdef0123456789abcdef", "bandwidthMBps": 400}
	c["platform"] = map[string]any{"chartDir": "/", "alerts": map[string]any{"idleFor": "1h"}}
	c["renderDir"] = "out"
	c["protect"] = true
	if _, err := plan.Load(stacktest.Encode(t, c), "test"); err == nil {
		t.Fatal("chartDir / has no charts: want an error")
	}
	delete(c["platform"].(map[string]any), "chartDir")
	raw := stacktest.Encode(t, c)
	if _, err := plan.Load(raw, "test"); err != nil {
		t.Fatal(err)
	}
	cfg, _, errs := config.Decode(raw)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	values, err := config.Encode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	back := map[string]string{}
	var secret []string
	for _, v := range values {
		back[strings.TrimPrefix(v.Key, config.Namespace+":")] = v.Value
		if v.Secret {
			secret = append(secret, v.Key)
		}
	}
	again, _, errs := config.Decode(back)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if diff := cmp.Diff(cfg, again); diff != "" {
		t.Errorf("config changed through Encode (-before +after):\n%s", diff)
	}
	for k := range c {
		if _, ok := back[k]; !ok {
			t.Errorf("Encode dropped %s", config.Key(k))
		}
	}
	slices.Sort(secret)
	if want := []string{config.Key("natron"), config.Key("serving"), config.Key("storage")}; !slices.Equal(secret, want) {
		t.Errorf("secret blocks %v, want the ones holding secrets %v", secret, want)
	}
}

// Pulumi.yaml declares exactly the keys of the block table, so `pulumi
// config` and the program agree on what a stack may set.
func TestPulumiYAMLDeclaresTheBlocks(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(pulumitest.RepoRoot(), "Pulumi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var project struct {
		Config map[string]any `json:"config"`
	}
	if err := yaml.Unmarshal(b, &project); err != nil {
		t.Fatal(err)
	}
	declared := slices.Sorted(maps.Keys(project.Config))
	keys := slices.Sorted(slices.Values(config.Keys()))
	if diff := cmp.Diff(keys, declared); diff != "" {
		t.Errorf("Pulumi.yaml config keys differ from the block table (-table +Pulumi.yaml):\n%s", diff)
	}
}

// A key that moved into the target's pool block is still read from the
// pool's top level, into the block, with a warning naming both places;
// written back, it is in the block.
func TestPoolKeysMovedIntoTheTargetBlock(t *testing.T) {
	t.Parallel()
	c := stacktest.AKS()
	pool := stacktest.Pool(c, 0)
	delete(pool, "aks")
	pool["zones"] = []any{"2", "3"}
	pool["osDiskSizeGB"] = 512
	cfg, warnings, errs := config.Decode(stacktest.Encode(t, c))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := []string{
		"gpu-node-pools:pools[0].zones is deprecated: it moved to gpu-node-pools:pools[0].aks.zones, where it is read from now; move it there",
		"gpu-node-pools:pools[0].osDiskSizeGB is deprecated: it moved to gpu-node-pools:pools[0].aks.osDiskSizeGB, where it is read from now; move it there",
	}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	b, err := json.Marshal(cfg.Pools[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); !strings.Contains(got, `"aks":{"zones":["2","3"],"osDiskSizeGB":512}`) || strings.Contains(got, `"zones":["2","3"],"osDiskSizeGB":512,`) {
		t.Errorf("pool written back: %s, want the moved keys in its aks block", got)
	}
	// the other pool's block decoded as written, no warning for it
	if b, _ := json.Marshal(cfg.Pools[1]); !strings.Contains(string(b), `"aks":{"spotMaxPrice":-1}`) {
		t.Errorf("pool 1: %s", b)
	}
}
