package pulumitest

import (
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/stacks/stackfile"
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
// program (stackfile.Read): secure values become SecretMarker and their
// keys are returned as secret.
func StackConfig(stack string) (map[string]string, []string, error) {
	f, err := stackfile.Read(RepoRoot(), stack, SecretMarker)
	if err != nil {
		return nil, nil, err
	}
	var secrets []string
	for _, path := range f.Secure {
		key, _, _ := strings.Cut(path, ".")
		if !slices.Contains(secrets, key) {
			secrets = append(secrets, key)
		}
	}
	return f.Raw, secrets, nil
}

// Unqualified drops the project namespace from config keys, giving the raw
// map that plan.Load takes.
func Unqualified(cfg map[string]string) map[string]string { return stackfile.Unqualified(cfg) }

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
