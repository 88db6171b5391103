package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/agext/levenshtein"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/stacks/target/registry"
)

// Decode decodes raw stack config strictly, reporting every unknown key
// and every value of the wrong type. raw maps a key without its namespace
// to the value as Pulumi hands it to programs: strings as they are, objects
// and lists as JSON. What fits is decoded even beside a problem, so that a
// pool with a misspelled key keeps its name. warnings are keys still read
// from where they used to be.
func Decode(raw map[string]string) (c *Config, warnings []string, errs field.ErrorList) {
	c = &Config{}
	keys := Keys()
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if !slices.Contains(keys, k) {
			errs = append(errs, fielderr.Invalid(path(k), k, "unknown key%s; allowed keys: %s", suggest(k, keys), strings.Join(keys, ", ")))
		}
	}
	blocks := Blocks()
	for _, b := range blocks { // the scalars first: blocks depend on the target
		if b.Scalar {
			errs = append(errs, b.set(c, raw[b.Key], path(b.Key))...)
		}
	}
	_, targetKnown := registry.Lookup(c.Target)
	for _, b := range blocks {
		v, p := raw[b.Key], path(b.Key)
		if b.Scalar || unset(v) {
			continue
		}
		if b.decode != nil {
			w, e := b.decode(c, p, v)
			warnings, errs = append(warnings, w...), append(errs, e...)
			continue
		}
		into := b.field
		if b.into != nil {
			if c.Target != b.Key && targetKnown {
				errs = append(errs, &field.Error{Type: field.ErrorTypeForbidden, Field: p.String(), BadValue: c.Target,
					Detail: fmt.Sprintf("only used when target is %s, got target %q", b.Key, c.Target)})
				continue
			}
			into = b.into
		}
		errs = append(errs, decodeBlock(p, v, into(c))...)
	}
	return c, warnings, errs
}

// Validate checks each block's own rules. A block or list item that
// decoding reported (decoded: its problems; none for a typed config the
// Automation API built) is not validated: its problem is already told.
func Validate(c *Config, decoded field.ErrorList) field.ErrorList {
	reported := decoded
	var errs field.ErrorList
	ok := func(p *field.Path) bool { return !fielderr.Reported(reported, p) }
	for _, b := range Blocks() {
		p := path(b.Key)
		if b.validate == nil || !cleanBlock(c, b, p, reported) {
			continue
		}
		errs = append(errs, b.validate(c, p, ok)...)
	}
	return errs
}

// cleanBlock: a list is validated item by item unless the list itself did
// not decode; any other block only when it decoded cleanly.
func cleanBlock(c *Config, b Block, p *field.Path, reported field.ErrorList) bool {
	if b.field != nil {
		if f := b.field(c); f != nil && reflect.TypeOf(f).Elem().Kind() == reflect.Slice {
			return !slices.ContainsFunc(reported, func(e *field.Error) bool { return e.Field == p.String() })
		}
	}
	return !fielderr.Reported(reported, p)
}

func path(k string) *field.Path { return field.NewPath(Key(k)) }

// unset is true for a block left out: Pulumi.yaml declares the optional
// blocks with {} or [] as default.
func unset(v string) bool {
	v = strings.TrimSpace(v)
	return v == "" || v == "{}" || v == "[]" || v == "null"
}

// decodeBlock decodes an object into a struct, or a list item by item, so
// that one broken item leaves the others decoded.
func decodeBlock(p *field.Path, data string, into any) field.ErrorList {
	t := reflect.TypeOf(into).Elem()
	if t.Kind() != reflect.Slice {
		return decodeStrict(p, data, into)
	}
	var items []json.RawMessage
	if err := json.Unmarshal([]byte(data), &items); err != nil {
		return field.ErrorList{fielderr.TypeInvalid(p, data, "a list of "+p.String()[len(Namespace)+1:], describeJSON(data))}
	}
	list := reflect.MakeSlice(t, len(items), len(items))
	var errs field.ErrorList
	for i, item := range items {
		errs = append(errs, decodeStrict(p.Index(i), string(item), list.Index(i).Addr().Interface())...)
	}
	reflect.ValueOf(into).Elem().Set(list)
	return errs
}

// decodeStrict decodes JSON into a struct, reporting every key the struct
// does not have and every value of the wrong type, each at its own path
// (json.Unmarshal stops at the first). What does fit is decoded anyway: a
// pool with a misspelled key keeps its name, so what refers to it by name
// is not reported too.
func decodeStrict(p *field.Path, data string, into any) field.ErrorList {
	var generic any
	if err := json.Unmarshal([]byte(data), &generic); err != nil {
		return field.ErrorList{fielderr.TypeInvalid(p, data, "valid JSON", err.Error())}
	}
	var errs field.ErrorList
	checkShape(&errs, p, generic, reflect.TypeOf(into))
	if err := json.Unmarshal([]byte(data), into); err != nil && len(errs) == 0 {
		errs = append(errs, fielderr.TypeInvalid(p, data, "valid", err.Error()))
	}
	return errs
}

// checkShape walks decoded JSON beside the Go type it is meant for.
func checkShape(errs *field.ErrorList, p *field.Path, v any, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v == nil || t.Kind() == reflect.Interface {
		return // null decodes to the zero value; any JSON fits an interface
	}
	wrong := func(jsonType string) {
		*errs = append(*errs, fielderr.TypeInvalid(p, v, typeWord(t), "a JSON "+jsonType))
	}
	switch x := v.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Struct:
			names, types := jsonFields(t)
			for _, k := range slices.Sorted(maps.Keys(x)) {
				ft, ok := types[k]
				if !ok {
					*errs = append(*errs, fielderr.Invalid(p.Child(k), k, "unknown key%s; allowed keys: %s", suggest(k, names), strings.Join(names, ", ")))
					continue
				}
				checkShape(errs, p.Child(k), x[k], ft)
			}
		case reflect.Map:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				checkShape(errs, p.Child(k), x[k], t.Elem())
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
			checkShape(errs, p.Index(i), item, t.Elem())
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

// requiredKeys are the keys of a block that its type does not mark
// omitempty: what a platform engineer must write.
func requiredKeys(v any) []string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := range t.NumField() {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" && !strings.Contains(opts, "omitempty") {
			out = append(out, name)
		}
	}
	return out
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
		if d := levenshtein.Distance(strings.ToLower(k), strings.ToLower(a), nil); d < bestDist {
			best, bestDist = a, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}
