// Package plain turns plain Go data (JSON-shaped: maps, lists, strings,
// numbers, booleans) into Pulumi inputs that are known at preview time and
// compare equal in tests.
package plain

import (
	"fmt"
	"math"
	"sort"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Input converts JSON-shaped data. Nil map entries are dropped.
func Input(v any) pulumi.Input {
	switch x := v.(type) {
	case map[string]any:
		return Map(x)
	case map[string]string:
		m := pulumi.StringMap{}
		for k, e := range x {
			m[k] = pulumi.String(e)
		}
		return m
	case []any:
		a := make(pulumi.Array, len(x))
		for i, e := range x {
			a[i] = Input(e)
		}
		return a
	case string:
		return pulumi.String(x)
	case bool:
		return pulumi.Bool(x)
	case int:
		return pulumi.Int(x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return pulumi.Int(int(x))
		}
		return pulumi.Float64(x)
	default:
		return pulumi.String(fmt.Sprint(x))
	}
}

// Map converts a JSON object.
func Map(m map[string]any) pulumi.Map {
	out := pulumi.Map{}
	for k, e := range m {
		if e != nil {
			out[k] = Input(e)
		}
	}
	return out
}

// SortedKeys returns a map's keys in order, for deterministic output.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
