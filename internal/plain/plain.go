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
	case Opaque:
		return x.Input
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

// Opaque is an input that is not plain data (an output: a secret, a
// value not yet known), carried through plain data as it is: Input gives
// it back.
type Opaque struct{ pulumi.Input }

// FromInput is the plain data an input holds, with any value that is not
// plain (an output) kept as an Opaque leaf.
func FromInput(v pulumi.Input) any {
	switch x := v.(type) {
	case pulumi.Map:
		return fromMap(x)
	case pulumi.StringMap:
		return fromMap(x)
	case pulumi.Array:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = FromInput(e)
		}
		return a
	case pulumi.StringArray:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = FromInput(e)
		}
		return a
	case pulumi.String:
		return string(x)
	case pulumi.Bool:
		return bool(x)
	case pulumi.Int:
		return int(x)
	case pulumi.Float64:
		return float64(x)
	case nil:
		return nil
	}
	return Opaque{v}
}

func fromMap[V pulumi.Input](m map[string]V) map[string]any {
	out := map[string]any{}
	for k, e := range m {
		out[k] = FromInput(e)
	}
	return out
}
