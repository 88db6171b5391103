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
		f.Add(get("target"), get("aks"), get("natron"), get("renderDir"), get("protect"), get("pools"),
			get("platform"), get("storage"), get("serving"), get("models"), get("batchJobs"))
	}
	f.Add("aks", `{"resourceGroup":"rg"}`, "", "", "true", `[{"name":"a","sku":"x","maxNodes":"1","labels":{"k":1}}]`,
		`{"values":{"devicePlugin":[]}}`, `{"kind":"s3"}`, `{"offPeakStartHour":-1}`, `[{"name":"m","pool":"a","tensorParallel":0}]`, `[{"schedule":"* * *"}]`)
	f.Add("natron", "{}", `{"site":1,"image":[]}`, " ", "auto", `[null,{},[],"x",1e99]`, "[]", "null", "{}", `[{"parametersB":1e308,"dtype":"int4","tensorParallel":1,"gpuMemoryUtilization":0.5,"maxReplicas":1}]`, `[{"schedule":"0 23-1 * * *"}]`)
	// regression: a huge timeSlicing made the fit check loop for minutes
	f.Add("aks", `{"resourceGroup":"rg","clusterName":"c"}`, "", "", "", `[{"name":"a","sku":"Standard_ND96asr_v4","maxNodes":1,"timeSlicing":1000000000}]`,
		"", "", "", `[{"name":"m","pool":"a","source":"az://m/x","parametersB":7,"dtype":"int4","tensorParallel":1,"maxModelLen":1,"gpuMemoryUtilization":0.5,"maxReplicas":1,"queueDepthTarget":1}]`, "")
	f.Fuzz(func(t *testing.T, target, aks, natron, renderDir, protect, pools, platform, storage, serving, models, batchJobs string) {
		raw := map[string]string{"target": target, "aks": aks, "natron": natron, "renderDir": renderDir, "protect": protect, "pools": pools,
			"platform": platform, "storage": storage, "serving": serving, "models": models, "batchJobs": batchJobs}
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
