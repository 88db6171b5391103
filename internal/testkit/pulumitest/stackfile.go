package pulumitest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// SecretMarker replaces every secure value read from a stack file, so tests
// can search for it in anything the program produces.
const SecretMarker = "SECRET-MARKER-7f3a9c"

// RepoRoot is the project's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// StackConfig reads Pulumi.<stack>.yaml the way the engine hands config to a
// program: project defaults from Pulumi.yaml first, then the stack's values;
// scalars as strings, objects and lists as JSON. Secure values become
// SecretMarker and their keys are returned as secret.
func StackConfig(stack string) (map[string]string, []string, error) {
	root := RepoRoot()
	project, err := readYAML(filepath.Join(root, "Pulumi.yaml"))
	if err != nil {
		return nil, nil, err
	}
	name, _ := project["name"].(string)
	cfg := map[string]string{}
	decls, _ := project["config"].(map[string]any)
	for k, d := range decls {
		decl, _ := d.(map[string]any)
		if def, ok := decl["default"]; ok {
			v, _, err := configValue(def)
			if err != nil {
				return nil, nil, err
			}
			cfg[name+":"+k] = v
		}
	}
	file, err := readYAML(filepath.Join(root, "Pulumi."+stack+".yaml"))
	if err != nil {
		return nil, nil, err
	}
	values, _ := file["config"].(map[string]any)
	var secrets []string
	for k, raw := range values {
		v, secret, err := configValue(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", k, err)
		}
		if !strings.Contains(k, ":") {
			k = name + ":" + k
		}
		cfg[k] = v
		if secret {
			secrets = append(secrets, k)
		}
	}
	return cfg, secrets, nil
}

func readYAML(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// configValue renders one config value as Pulumi passes it to a program.
func configValue(v any) (string, bool, error) {
	v, secret := unsecure(v)
	switch x := v.(type) {
	case string:
		return x, secret, nil
	case map[string]any, []any:
		b, err := json.Marshal(x)
		return string(b), secret, err
	default:
		return fmt.Sprint(x), secret, nil
	}
}

// unsecure replaces {secure: ...} values, at any depth, by SecretMarker.
func unsecure(v any) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["secure"]; ok && len(x) == 1 {
			return SecretMarker, true
		}
		secret := false
		out := map[string]any{}
		for k, e := range x {
			var s bool
			out[k], s = unsecure(e)
			secret = secret || s
		}
		return out, secret
	case []any:
		secret := false
		out := make([]any, len(x))
		for i, e := range x {
			var s bool
			out[i], s = unsecure(e)
			secret = secret || s
		}
		return out, secret
	}
	return v, false
}

// Unqualified drops the project namespace from config keys, giving the raw
// map that plan.Load takes.
func Unqualified(cfg map[string]string) map[string]string {
	out := make(map[string]string, len(cfg))
	for k, v := range cfg {
		_, short, ok := strings.Cut(k, ":")
		if !ok {
			short = k
		}
		out[short] = v
	}
	return out
}

// NoChanges fails the test for any operation of a change summary other than
// "same".
func NoChanges[K ~string](t testing.TB, what string, changes map[K]int) {
	t.Helper()
	for op, n := range changes {
		if op != K("same") && n > 0 {
			t.Errorf("%s: %d %s, want no changes", what, n, op)
		}
	}
}
