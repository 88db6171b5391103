package stacks

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/natron/gpu-node-pools/components/catalog"
	"github.com/natron/gpu-node-pools/components/gpupool"
	"github.com/natron/gpu-node-pools/components/plain"
)

// Load decodes raw stack config strictly and validates it, reporting every
// problem in one *ConfigError. raw maps a key without its namespace to the
// value as Pulumi hands it to programs: strings as they are, objects and
// lists as JSON.
func Load(raw map[string]string) (*Config, error) {
	return load(raw, os.Getenv)
}

func load(raw map[string]string, getenv func(string) string) (*Config, error) {
	var ps problems
	cfg := &Config{}
	skip := map[string]bool{} // blocks whose decoding failed: not validated

	for _, k := range plain.SortedKeys(raw) {
		if !slices.Contains(configKeys, k) {
			ps.add(key(k), "unknown key%s; allowed keys: %s, got %q", suggest(k, configKeys), strings.Join(configKeys, ", "), k)
		}
	}
	cfg.Target = catalog.Target(raw["target"])
	cfg.RenderDir = raw["renderDir"]
	switch v := raw["protect"]; v {
	case "", "auto":
	case "true", "false":
		b := v == "true"
		cfg.Protect = &b
	default:
		ps.add(key("protect"), "must be true, false or auto, got %q", v)
	}
	if v := raw["aks"]; !emptyObject(v) {
		cfg.AKS = &AKSConfig{}
		skip["aks"] = !decodeStrict(&ps, key("aks"), v, cfg.AKS)
	}
	if v := raw["natron"]; !emptyObject(v) {
		cfg.Natron = &NatronConfig{}
		skip["natron"] = !decodeStrict(&ps, key("natron"), v, cfg.Natron)
	}
	if v := raw["pools"]; v != "" {
		var items []json.RawMessage
		if err := json.Unmarshal([]byte(v), &items); err != nil {
			ps.add(key("pools"), "must be a list of pools, got %s", describeJSON(v))
			skip["pools"] = true
		}
		cfg.Pools = make([]gpupool.Spec, len(items))
		for i, item := range items {
			p := fmt.Sprintf("pools[%d]", i)
			skip[p] = !decodeStrict(&ps, key(p), string(item), &cfg.Pools[i])
		}
	}
	for _, b := range []struct {
		k    string
		into any
	}{{"storage", &cfg.Storage}, {"serving", &cfg.Serving}, {"models", &cfg.Models}, {"batchJobs", &cfg.BatchJobs}, {"policies", &cfg.Policies}} {
		if v := raw[b.k]; !emptyObject(v) && strings.TrimSpace(v) != "[]" {
			skip[b.k] = !decodeStrict(&ps, key(b.k), v, b.into)
		}
	}
	if v := raw["platform"]; !emptyObject(v) {
		skip["platform"] = !decodeStrict(&ps, key("platform"), v, &cfg.Platform)
	}
	if cfg.Platform.ChartDir == "" {
		cfg.Platform.ChartDir = getenv(ChartDirEnv)
	}
	ps = append(ps, validate(cfg, skip)...)
	if err := ps.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// emptyObject is true for an unset block: Pulumi.yaml declares the optional
// blocks with {} as default.
func emptyObject(v string) bool {
	v = strings.TrimSpace(v)
	return v == "" || v == "{}" || v == "null"
}

// decodeStrict decodes JSON into a struct, reporting keys the struct does
// not have and values of the wrong type. It returns false when the value
// could not be decoded completely.
func decodeStrict(ps *problems, path, data string, into any) bool {
	var generic any
	if err := json.Unmarshal([]byte(data), &generic); err != nil {
		ps.add(path, "is not valid: %v", err)
		return false
	}
	before := len(*ps)
	checkShape(ps, path, generic, reflect.TypeOf(into))
	if len(*ps) > before {
		return false // checkShape reported every unknown key and wrong type
	}
	if err := json.Unmarshal([]byte(data), into); err != nil {
		ps.add(path, "is not valid: %v", err)
		return false
	}
	return true
}

// checkShape walks decoded JSON beside the Go type it is meant for and
// reports every key the type has no field for and every value of the wrong
// JSON type, each at its own path (json.Unmarshal stops at the first).
func checkShape(ps *problems, path string, v any, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil || t.Kind() == reflect.Interface {
		return // null decodes to the zero value; any JSON fits an interface
	}
	wrong := func(jsonType string) { ps.add(path, "must be %s, got a JSON %s", typeWord(t), jsonType) }
	switch x := v.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Struct:
			names, types := jsonFields(t)
			for _, k := range plain.SortedKeys(x) {
				ft, ok := types[k]
				if !ok {
					ps.add(path+"."+k, "unknown key%s; allowed keys: %s, got %q", suggest(k, names), strings.Join(names, ", "), k)
					continue
				}
				checkShape(ps, path+"."+k, x[k], ft)
			}
		case reflect.Map:
			for _, k := range plain.SortedKeys(x) {
				checkShape(ps, path+"."+k, x[k], t.Elem())
			}
		default:
			wrong("object")
		}
	case []any:
		if t.Kind() != reflect.Slice {
			wrong("list")
			return
		}
		for i, item := range x {
			checkShape(ps, fmt.Sprintf("%s[%d]", path, i), item, t.Elem())
		}
	case string:
		if t.Kind() != reflect.String {
			wrong(fmt.Sprintf("string %q", x))
		}
	case bool:
		if t.Kind() != reflect.Bool {
			wrong(fmt.Sprintf("boolean %v", x))
		}
	case float64:
		switch t.Kind() {
		case reflect.Float32, reflect.Float64:
		case reflect.Int, reflect.Int32, reflect.Int64:
			if x != math.Trunc(x) || math.Abs(x) > 1<<31 {
				wrong(fmt.Sprintf("number %v", x))
			}
		default:
			wrong(fmt.Sprintf("number %v", x))
		}
	}
}

// jsonFields lists a struct's JSON field names in declaration order.
func jsonFields(t reflect.Type) ([]string, map[string]reflect.Type) {
	var names []string
	types := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			// an embedded struct's fields are the outer object's keys
			n, ts := jsonFields(f.Type)
			names = append(names, n...)
			maps.Copy(types, ts)
			continue
		}
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		names = append(names, name)
		types[name] = f.Type
	}
	return names, types
}

func typeWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return typeWord(t.Elem())
	}
	return t.String()
}

func describeJSON(v string) string {
	var generic any
	if json.Unmarshal([]byte(v), &generic) != nil {
		return fmt.Sprintf("%q", v)
	}
	switch generic.(type) {
	case map[string]any:
		return "an object"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%q", v)
}

// suggest offers the closest allowed key for a likely typo.
func suggest(k string, allowed []string) string {
	best, bestDist := "", 3
	for _, a := range allowed {
		if d := editDistance(strings.ToLower(k), strings.ToLower(a)); d < bestDist {
			best, bestDist = a, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
