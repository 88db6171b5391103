package program

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
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
		get := func(k string) string { return cfg[config.Key(k)] }
		f.Add(get("target"), get("aks"), get("natron"), get("renderDir"), get("protect"), get("pools"),
			get("platform"), get("storage"), get("serving"), get("models"), get("batchJobs"), get("policies"))
	}
	f.Add("aks", `{"resourceGroup":"rg"}`, "", "", "true", `[{"name":"a","sku":"x","maxNodes":"1","labels":{"k":1}}]`,
		`{"values":{"devicePlugin":[]}}`, `{"kind":"s3"}`, `{"offPeakStartHour":-1}`, `[{"name":"m","pool":"a","tensorParallel":0}]`, `[{"schedule":"* * *"}]`,
		`{"allowedRegistries":{"registries":["", "docker.io/"]}}`)
	f.Add("natron", "{}", `{"site":1,"image":[]}`, " ", "auto", `[null,{},[],"x",1e99]`, "[]", "null", "{}", `[{"parametersB":1e308,"dtype":"int4","tensorParallel":1,"gpuMemoryUtilization":0.5,"maxReplicas":1}]`, `[{"schedule":"0 23-1 * * *"}]`,
		`{"enabled":false,"gpuTaint":{"exemptNamespaces":[null]}}`)
	// the target's pool block: written there, at the pool's top level as
	// before, both, malformed, and on the other target
	f.Add("aks", `{"resourceGroup":"rg","clusterName":"c"}`, "", "", "", `[{"name":"a","sku":"Standard_NC24ads_A100_v4","maxNodes":1,"zones":["1"],"aks":{"zones":["2"],"osDiskSizeGB":"x"}},{"name":"b","sku":"Standard_NC24ads_A100_v4","maxNodes":1,"aks":[],"spotMaxPrice":null}]`,
		"", "", "", "", "", "")
	f.Add("natron", "{}", "{}", "", "", `[{"name":"a","sku":"h100-80gb-x8","maxNodes":1,"aks":{"zones":["1"]},"osDiskSizeGB":1},"aks"]`, "", "", "", "", "", "")
	// regression: a huge timeSlicing made the fit check loop for minutes
	f.Add("aks", `{"resourceGroup":"rg","clusterName":"c"}`, "", "", "", `[{"name":"a","sku":"Standard_ND96asr_v4","maxNodes":1,"timeSlicing":1000000000}]`,
		"", "", "", `[{"name":"m","pool":"a","source":"az://m/x","parametersB":7,"dtype":"int4","tensorParallel":1,"maxModelLen":1,"gpuMemoryUtilization":0.5,"maxReplicas":1,"queueDepthTarget":1}]`, "", "")
	f.Fuzz(func(t *testing.T, target, aks, natron, renderDir, protect, pools, platform, storage, serving, models, batchJobs, policies string) {
		raw := map[string]string{"target": target, "aks": aks, "natron": natron, "renderDir": renderDir, "protect": protect, "pools": pools,
			"platform": platform, "storage": storage, "serving": serving, "models": models, "batchJobs": batchJobs, "policies": policies}
		checkLoad(t, raw)
	})
}

// checkLoad holds for any raw config: no panic, every problem under a key
// path of the namespace, and an accepted config with pools that resolves
// the same when the Automation API hands it over typed.
func checkLoad(t *testing.T, raw map[string]string) {
	t.Helper()
	p, err := plan.Load(raw, "fuzz")
	if err != nil {
		var ce *plan.ConfigError
		if !errors.As(err, &ce) || len(ce.Problems) == 0 {
			t.Fatalf("want a ConfigError with problems, got %v", err)
		}
		for _, p := range ce.Problems {
			if !strings.HasPrefix(p.Path, config.Namespace+":") || p.Msg == "" {
				t.Fatalf("problem without a key path or message: %+v", p)
			}
		}
		return
	}
	if len(p.Pools) == 0 {
		t.Fatalf("accepted a config without pools: %q", raw)
	}
	cfg, _, _ := config.Decode(raw)
	if _, err := plan.Resolve(cfg, "fuzz"); err != nil {
		t.Fatalf("Load accepted what Resolve rejects: %v", err)
	}
}

// interesting are the values FuzzBreak writes into a valid config.
var interesting = []any{nil, true, false, 0, -1, 1, 2, 48, 49, 1000, 1001, 1e308, -1e308, 0.5, "",
	" ", "x", "Enforce", "Audit", "MIG3g", "nvcr.io", "docker.io/vllm", "s3://m/x", "az://m/x", "0 2 * * *",
	strings.Repeat("a", 300), []any{}, []any{nil}, []any{"1", "1"}, map[string]any{}, map[string]any{"": ""}}

// FuzzBreak starts from the real stack files and, driven by the fuzzer's
// bytes, overwrites or deletes fields anywhere in them, so that most inputs
// are valid configs with a few bad values: the validators, not the JSON
// decoder, get exercised at scale.
func FuzzBreak(f *testing.F) {
	bases := map[string]map[string]any{}
	for _, stack := range []string{"dev", "prod"} {
		cfg, _, err := pulumitest.StackConfig(stack)
		if err != nil {
			f.Fatal(err)
		}
		base := map[string]any{}
		for k, v := range pulumitest.Unqualified(cfg) {
			var decoded any
			if json.Unmarshal([]byte(v), &decoded) != nil {
				decoded = v // plain strings such as the target
			}
			base[k] = decoded
		}
		bases[stack] = base
	}
	for _, seed := range [][]byte{{}, {0, 3, 1, 7}, {1, 5, 0, 2, 9, 9, 4, 1}, {0, 200, 13, 0, 14, 17, 2, 2}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, ops []byte) {
		stack := "dev"
		if len(ops) > 0 && ops[0]%2 == 1 {
			stack = "prod"
		}
		c := clone(bases[stack]).(map[string]any)
		for i := 1; i+3 <= len(ops); i += 3 {
			path := leaves(c)
			if len(path) == 0 {
				break
			}
			at := path[int(binary.BigEndian.Uint16(ops[i:i+2]))%len(path)]
			// a copy: a shared container written into itself would be a cycle
			v := clone(interesting[int(ops[i+2])%len(interesting)])
			if ops[i+2] >= 250 {
				v = deleteMe
			}
			c = set(c, at, v).(map[string]any)
		}
		raw := map[string]string{}
		for k, v := range c {
			if s, ok := v.(string); ok {
				raw[k] = s
				continue
			}
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			raw[k] = string(b)
		}
		checkLoad(t, raw)
	})
}

type deleted struct{}

var deleteMe = deleted{}

// leaves lists the paths of every value in a decoded config, containers
// included, in a stable order.
func leaves(v any) [][]any {
	var out [][]any
	var walk func(prefix []any, v any)
	walk = func(prefix []any, v any) {
		out = append(out, slices.Clone(prefix))
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(append(prefix, k), x[k])
			}
		case []any:
			for i, e := range x {
				walk(append(prefix, i), e)
			}
		}
	}
	walk(nil, v)
	return out[1:] // not the root
}

// set returns v with the value at path replaced (or deleted).
func set(v any, path []any, to any) any {
	if len(path) == 0 {
		return to
	}
	switch x := v.(type) {
	case map[string]any:
		k := path[0].(string)
		if len(path) == 1 && to == deleteMe {
			delete(x, k)
			return x
		}
		x[k] = set(x[k], path[1:], to)
	case []any:
		i := path[0].(int)
		if len(path) == 1 && to == deleteMe {
			return append(x[:i], x[i+1:]...)
		}
		x[i] = set(x[i], path[1:], to)
	}
	return v
}

func clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = clone(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = clone(e)
		}
		return out
	}
	return v
}

// The break operations themselves work: a deleted pool name is reported.
func TestBreakReachesTheValidators(t *testing.T) {
	c := map[string]any{"pools": []any{map[string]any{"name": "a", "sku": "x"}}}
	for _, p := range leaves(c) {
		if fmt.Sprint(p) == "[pools 0 name]" {
			c = set(c, p, deleteMe).(map[string]any)
		}
	}
	if _, ok := c["pools"].([]any)[0].(map[string]any)["name"]; ok {
		t.Fatalf("set did not delete pools[0].name: %v", c)
	}
}
