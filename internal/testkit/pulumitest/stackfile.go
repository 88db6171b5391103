package pulumitest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/natron/gpu-node-pools/stacks/stackfile"
)

// SecretMarker replaces every secure value read from a stack file, so tests
// can search for it in anything the program produces.
const SecretMarker = "SECRET-MARKER-7f3a9c"

// RepoRoot is the project's top directory: the nearest directory above
// the working directory (go test runs a package's tests in its
// directory) whose go.mod is this module's. Not from runtime.Caller: make
// test builds with -trimpath, which leaves no directory in the binary.
func RepoRoot() string {
	repoRootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			panic(err)
		}
		for d := dir; ; d = filepath.Dir(d) {
			if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && modulePath(b) == module {
				repoRoot = d
				return
			}
			if filepath.Dir(d) == d {
				panic(fmt.Sprintf("no go.mod of %s above %s", module, dir))
			}
		}
	})
	return repoRoot
}

const module = "github.com/natron/gpu-node-pools"

// modulePath is a go.mod's module path.
func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

var (
	repoRootOnce sync.Once
	repoRoot     string
)

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
