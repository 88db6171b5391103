package stacks

import (
	"testing"

	"github.com/natron/gpu-node-pools/tests/pulumitest"
)

// FuzzLoad feeds arbitrary values for every top-level key through decoding
// and validation: never a panic, and an accepted config is valid by the
// typed validator too. Seeded with the real stack files.
func FuzzLoad(f *testing.F) {
	for _, stack := range []string{"dev", "prod"} {
		cfg, _, err := pulumitest.StackConfig(stack)
		if err != nil {
			f.Fatal(err)
		}
		get := func(k string) string { return cfg[Namespace+":"+k] }
		f.Add(get("target"), get("aks"), get("natron"), get("renderDir"), get("protect"), get("pools"))
	}
	f.Add("aks", `{"resourceGroup":"rg"}`, "", "", "true", `[{"name":"a","sku":"x","maxNodes":"1","labels":{"k":1}}]`)
	f.Add("natron", "{}", `{"site":1,"image":[]}`, " ", "auto", `[null,{},[],"x",1e99]`)
	f.Fuzz(func(t *testing.T, target, aks, natron, renderDir, protect, pools string) {
		raw := map[string]string{"target": target, "aks": aks, "natron": natron, "renderDir": renderDir, "protect": protect, "pools": pools}
		cfg, err := Load(raw)
		if err != nil {
			return
		}
		if len(cfg.Pools) == 0 {
			t.Fatalf("accepted a config without pools: %q", raw)
		}
		if err := Validate(cfg); err != nil {
			t.Fatalf("Load accepted what Validate rejects: %v", err)
		}
	})
}
