package pulumitest

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ToolchainEnv names the bin directory of the pinned Pulumi toolchain (the
// last line of .ci/toolchain/install.sh); make test sets it.
const ToolchainEnv = "GPU_NODE_POOLS_PULUMI_BIN"

// PulumiRoot returns the toolchain root (the directory above bin/), or skips
// the test saying how to get one. In CI a missing toolchain is a failure.
func PulumiRoot(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(ToolchainEnv)
	if bin == "" {
		Missing(t, "real-engine test needs %s: run `make test` (or `make toolchain` and export %s=<its last line>)", ToolchainEnv, ToolchainEnv)
	}
	for _, b := range []string{"pulumi", "pulumi-language-go", "pulumi-resource-kubernetes"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("toolchain in %s lacks %s: run `make toolchain`", bin, b)
		}
	}
	return filepath.Dir(bin)
}

// EngineEnv is the environment the engine runs with in tests: the built
// toolchain first on PATH, nothing downloaded, a private PULUMI_HOME.
func EngineEnv(t testing.TB, root, backend string) map[string]string {
	t.Helper()
	return map[string]string{
		"PATH":                     filepath.Join(root, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"PULUMI_BACKEND_URL":       backend,
		"PULUMI_HOME":              filepath.Join(t.TempDir(), "pulumi-home"),
		"PULUMI_CONFIG_PASSPHRASE": "engine-test-passphrase",
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
		"PULUMI_SKIP_UPDATE_CHECK":                    "true",
		// Charts from the shared archives: the engine tests run offline.
		"GPU_NODE_POOLS_CHART_DIR": filepath.Join(SharedDir(t), "charts"),
		"GOFLAGS":                  CopyGOFLAGS(),
	}
}

// CopyGOFLAGS is GOFLAGS for Go builds in a copy of the project
// (CopyProject): without -trimpath the build cache keys each package of
// ours by its directory, so every copy compiled the whole program again
// (over 100 s of CPU each); with it, a copy builds from the cache of the
// first and only links.
func CopyGOFLAGS() string {
	flags := os.Getenv("GOFLAGS")
	if strings.Contains(flags, "-trimpath") {
		return flags
	}
	return strings.TrimSpace(flags + " -trimpath")
}

// CopyProject copies the program (not its tests) into a fresh directory, so
// an engine test can change its stack files and render into it freely.
func CopyProject(t testing.TB) string {
	t.Helper()
	root := RepoRoot()
	dst := t.TempDir()
	for _, f := range []string{"Pulumi.yaml", "Pulumi.dev.yaml", "Pulumi.prod.yaml", "go.mod", "go.sum", "main.go", "Makefile"} {
		copyFile(t, filepath.Join(root, f), filepath.Join(dst, f))
	}
	// Every source directory but the tests: a hand-kept list missed
	// internal/ when the libraries moved there.
	for _, dir := range programDirs(t, root) {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			// sources and the files they embed; not the tests
			if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			copyFile(t, p, filepath.Join(dst, rel))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	seedBins(t, dst)
	return dst
}

// programDirs lists the top-level directories the program builds from:
// not the tests, and not what the checkout's make targets left there (the
// top-level directories its .gitignore names: a developer's backend, its
// installed binaries, its renders), which a fresh clone does not have.
func programDirs(t testing.TB, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	ignored := ignoredDirs(t, root)
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != ".git" && e.Name() != "tests" && e.Name() != ".github" &&
			!slices.ContainsFunc(ignored, func(p string) bool { ok, _ := filepath.Match(p, e.Name()); return ok }) {
			dirs = append(dirs, e.Name())
		}
	}
	return dirs
}

// ignoredDirs are the patterns of the top-level directories root's
// .gitignore names ("/rendered-*/").
func ignoredDirs(t testing.TB, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(l), "/"); ok && strings.HasSuffix(p, "/") && !strings.Contains(strings.TrimSuffix(p, "/"), "/") {
			out = append(out, strings.TrimSuffix(p, "/"))
		}
	}
	return out
}

func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, info.Mode().Perm()); err != nil { // scripts stay executable
		t.Fatal(err)
	}
}

// FilesContaining lists the files under dirs whose content holds s.
func FilesContaining(t testing.TB, s string, dirs ...string) []string {
	t.Helper()
	var hits []string
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if strings.Contains(string(b), s) {
				hits = append(hits, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return hits
}
