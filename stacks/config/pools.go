package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/stacks/target/registry"
)

// decodePools decodes the pools item by item: each target's own keys
// (pools[i].<target>) into the type the target gives, refused on another
// target; a target key still written at the pool's top level, where it
// was before the target had its block, is moved there with a warning.
func decodePools(c *Config, p *field.Path, data string) ([]string, field.ErrorList) {
	var items []json.RawMessage
	if err := json.Unmarshal([]byte(data), &items); err != nil {
		return nil, field.ErrorList{fielderr.TypeInvalid(p, data, "a list of pools", describeJSON(data))}
	}
	c.Pools = make([]gpupool.Spec, len(items))
	var warnings []string
	var errs field.ErrorList
	for i, item := range items {
		w, e := decodePool(c, p.Index(i), item, &c.Pools[i])
		warnings, errs = append(warnings, w...), append(errs, e...)
	}
	return warnings, errs
}

func decodePool(c *Config, p *field.Path, item json.RawMessage, into *gpupool.Spec) ([]string, field.ErrorList) {
	var keys map[string]json.RawMessage
	if json.Unmarshal(item, &keys) != nil {
		return nil, decodeStrict(p, string(item), into) // says what is wrong with it
	}
	var warnings []string
	var errs field.ErrorList
	for _, t := range registry.All() {
		name := string(t.Name())
		opts := t.NewPoolOptions()
		if opts == nil {
			continue
		}
		block, set := keys[name]
		delete(keys, name)
		if name != c.Target {
			if set {
				errs = append(errs, fielderr.Forbidden(p.Child(name), c.Target, "only used when target is %s", name))
			}
			errs = append(errs, othersKeys(p, keys, name, opts)...)
			continue
		}
		moved, w, e := movedKeys(p, keys, block, name, opts)
		warnings, errs = append(warnings, w...), append(errs, e...)
		if set || len(moved) > 0 {
			errs = append(errs, decodeStrict(p.Child(name), string(moved), opts)...)
			into.Options = opts
		}
	}
	rest, err := json.Marshal(keys)
	if err != nil {
		return warnings, append(errs, fielderr.TypeInvalid(p, string(item), "a pool", err.Error()))
	}
	return warnings, append(errs, decodeStrict(p, string(rest), into)...)
}

// movedKeys are the target's block with the target's keys that the pool
// sets at its top level moved in (and removed from keys): each a warning,
// or a problem when the block sets it too.
func movedKeys(p *field.Path, keys map[string]json.RawMessage, block json.RawMessage, name string, opts gpupool.Options) (json.RawMessage, []string, field.ErrorList) {
	inBlock := map[string]json.RawMessage{}
	if len(block) > 0 && json.Unmarshal(block, &inBlock) != nil {
		return block, nil, nil // decodeStrict says what is wrong with it
	}
	var warnings []string
	var errs field.ErrorList
	for _, kv := range topLevel(keys, opts) {
		if _, both := inBlock[kv.key]; both {
			errs = append(errs, fielderr.Duplicate(p.Child(kv.key), jsonValue(kv.value), "set in both %s and %s: keep %s", p.Child(kv.key), p.Child(name, kv.key), p.Child(name, kv.key)))
			continue
		}
		inBlock[kv.key] = kv.value
		warnings = append(warnings, fmt.Sprintf("%s is deprecated: it moved to %s, where it is read from now; move it there", p.Child(kv.key), p.Child(name, kv.key)))
	}
	if len(warnings) == 0 && len(errs) == 0 {
		return block, nil, nil
	}
	merged, _ := json.Marshal(inBlock)
	return merged, warnings, errs
}

// othersKeys refuses (and removes from keys) another target's keys set at
// the pool's top level, where they were before that target had its block.
func othersKeys(p *field.Path, keys map[string]json.RawMessage, name string, opts gpupool.Options) field.ErrorList {
	var errs field.ErrorList
	for _, kv := range topLevel(keys, opts) {
		errs = append(errs, fielderr.Forbidden(p.Child(kv.key), jsonValue(kv.value), "only used when target is %s (%s)", name, p.Child(name, kv.key)))
	}
	return errs
}

type keyValue struct {
	key   string
	value json.RawMessage
}

// topLevel removes from a pool's keys, and returns in the options' field
// order, those of a target's block (opts) that the pool sets at its top
// level and the shared pool spec does not have.
func topLevel(keys map[string]json.RawMessage, opts gpupool.Options) []keyValue {
	shared, _ := jsonFields(reflect.TypeFor[gpupool.Spec]())
	t := reflect.TypeOf(opts)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	own, _ := jsonFields(t)
	var out []keyValue
	for _, k := range own {
		if v, set := keys[k]; set && !slices.Contains(shared, k) {
			delete(keys, k)
			out = append(out, keyValue{k, v})
		}
	}
	return out
}

// jsonValue is a JSON value as problems quote it (a list of strings
// quoted, as a Go []string is).
func jsonValue(v json.RawMessage) any {
	var strs []string
	if json.Unmarshal(v, &strs) == nil {
		return strs
	}
	var value any
	_ = json.Unmarshal(v, &value)
	return value
}
