package config

import (
	"reflect"
	"strings"

	"github.com/natron/gpu-node-pools/internal/secret"
	"github.com/natron/gpu-node-pools/stacks/target/registry"
)

// KeyPath is one settable key of the config, found in its types.
type KeyPath struct {
	// Path is the full key path: gpu-node-pools:storage.accessKey, with
	// [*] for list items (gpu-node-pools:models[*].dtype).
	Path string
	// Secret is set for a secret.Secret value.
	Secret bool
	// Type is the value's Go type; Owner and Field the struct field that
	// holds it (nil and "" for a scalar block), where its doc comment is.
	Type  reflect.Type
	Owner reflect.Type
	Field string
}

// KeyPaths are every leaf key of every block, from the config's types: the
// one list docs and checks are held against.
func KeyPaths() []KeyPath { return keyPaths }

// SecretKeys are the key paths of every value that must be a secret
// (gpu-node-pools:storage.accessKey): a field of type secret.Secret is one,
// wherever it sits.
func SecretKeys() []string {
	var out []string
	for _, k := range keyPaths {
		if k.Secret {
			out = append(out, k.Path)
		}
	}
	return out
}

var keyPaths = func() []KeyPath {
	var out []KeyPath
	var walk func(t reflect.Type, path string, owner reflect.Type, fieldName string)
	walk = func(t reflect.Type, path string, owner reflect.Type, fieldName string) {
		for t.Kind() == reflect.Pointer || (t.Kind() == reflect.Slice && elem(t).Kind() == reflect.Struct) {
			if t.Kind() == reflect.Slice {
				path += "[*]"
			}
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t == reflect.TypeFor[secret.Secret]() {
			out = append(out, KeyPath{Path: path, Secret: t == reflect.TypeFor[secret.Secret](), Type: t, Owner: owner, Field: fieldName})
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			switch {
			case name == "" && f.Anonymous: // embedded: its keys are the parent's
				walk(f.Type, path, t, f.Name)
				continue
			case name == "":
				name = f.Name
			}
			walk(f.Type, path+"."+name, t, f.Name)
		}
	}
	var c Config
	for _, b := range Blocks() {
		switch t, ok := registry.Lookup(b.Key); {
		case b.Scalar:
			out = append(out, KeyPath{Path: Key(b.Key), Type: reflect.TypeFor[string]()})
		case ok:
			walk(reflect.TypeOf(t.NewCluster()), Key(b.Key), nil, "")
		default:
			if f := b.field(&c); f != nil {
				walk(reflect.TypeOf(f), Key(b.Key), nil, "")
			}
		}
		if b.Key == "pools" { // each target's own pool block (decodePools)
			for _, t := range registry.All() {
				if o := t.NewPoolOptions(); o != nil {
					walk(reflect.TypeOf(o), Key(b.Key)+"[*]."+string(t.Name()), nil, "")
				}
			}
		}
	}
	return out
}()

func elem(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t
}
