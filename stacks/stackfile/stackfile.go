// Package stackfile reads a customer's stack file offline, the way the
// engine hands its config to the program, so that a tool can check a stack
// before the engine (or its backend) ever sees it.
package stackfile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// File is one Pulumi.<stack>.yaml with its project's defaults.
type File struct {
	Stack string
	// Raw is the config as the program receives it: project defaults from
	// Pulumi.yaml, then the stack's values; scalars as strings, objects
	// and lists as JSON; fully qualified keys (project:key).
	Raw map[string]string
	// Secure are the key paths holding a secure value (gpu-node-pools:
	// storage.accessKey), which Raw holds as the placeholder given to Read.
	Secure []string
	// Salt reports whether the file carries an encryption salt, which ties
	// it to the passphrase it was made with; EncryptionSalt is its value.
	Salt           bool
	EncryptionSalt string
	// SecretsProvider is the file's secretsprovider (empty: the passphrase
	// provider, or none chosen yet).
	SecretsProvider string
}

// Path is a stack's file in projectDir.
func Path(projectDir, stack string) string {
	return filepath.Join(projectDir, "Pulumi."+stack+".yaml")
}

// Stacks lists the stack files in projectDir.
func Stacks(projectDir string) []string {
	files, _ := filepath.Glob(filepath.Join(projectDir, "Pulumi.*.yaml"))
	var out []string
	for _, f := range files {
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "Pulumi."), ".yaml"))
	}
	sort.Strings(out)
	return out
}

// Read reads stack's file in projectDir; secure values become placeholder.
func Read(projectDir, stack, placeholder string) (*File, error) {
	project, err := readYAML(filepath.Join(projectDir, "Pulumi.yaml"))
	if err != nil {
		return nil, err
	}
	name, _ := project["name"].(string)
	f := &File{Stack: stack, Raw: map[string]string{}}
	decls, _ := project["config"].(map[string]any)
	for k, d := range decls {
		decl, _ := d.(map[string]any)
		if def, ok := decl["default"]; ok {
			v, err := f.value(name+":"+k, def, placeholder)
			if err != nil {
				return nil, err
			}
			f.Raw[name+":"+k] = v
		}
	}
	path := Path(projectDir, stack)
	file, err := readYAML(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("no stack file %s; stacks here: %s", filepath.Base(path), strings.Join(Stacks(projectDir), ", "))
		}
		return nil, err
	}
	f.EncryptionSalt, f.Salt = file["encryptionsalt"].(string)
	f.SecretsProvider, _ = file["secretsprovider"].(string)
	values, _ := file["config"].(map[string]any)
	for k, raw := range values {
		if !strings.Contains(k, ":") {
			k = name + ":" + k
		}
		v, err := f.value(k, raw, placeholder)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", filepath.Base(path), k, err)
		}
		f.Raw[k] = v
	}
	sort.Strings(f.Secure)
	return f, nil
}

func readYAML(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dups, err := duplicateKeys(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(dups) > 0 {
		return nil, fmt.Errorf("%s: %s", filepath.Base(path), strings.Join(dups, "; "))
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// value renders one config value as Pulumi passes it to a program,
// recording where secure values were.
func (f *File) value(key string, v any, placeholder string) (string, error) {
	v = f.unsecure(key, v, placeholder)
	switch x := v.(type) {
	case string:
		return x, nil
	case map[string]any, []any:
		b, err := json.Marshal(x)
		return string(b), err
	default:
		return fmt.Sprint(x), nil
	}
}

// unsecure replaces {secure: ...} values, at any depth, by placeholder
// and their path: two secrets read alike only where they are one (the
// checks that two credentials differ judge placeholders as they would
// the values).
func (f *File) unsecure(path string, v any, placeholder string) any {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["secure"]; ok && len(x) == 1 {
			f.Secure = append(f.Secure, path)
			return Placeholder(placeholder, path)
		}
		out := map[string]any{}
		for k, e := range x {
			out[k] = f.unsecure(path+"."+k, e, placeholder)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = f.unsecure(fmt.Sprintf("%s[%d]", path, i), e, placeholder)
		}
		return out
	}
	return v
}

// Placeholder is what a secure value at path reads as.
func Placeholder(placeholder, path string) string { return placeholder + "#" + path }

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
