package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// A toolchain cache from before the language-host shim holds the host
// itself as pulumi-language-go: install.sh moves it aside as the shim's
// .real and writes the shim, building nothing (every part is cached), and
// the shim passes Pulumi.yaml's runtime.options.binary to the host as its
// -binary flag, and nothing when the project names no binary.
func TestInstallTurnsAnOldLanguageHostIntoTheShims(t *testing.T) {
	t.Parallel()
	// the cache's directory for today's versions, as make test's toolchain has it
	real := filepath.Dir(pulumitest.PulumiRoot(t))
	name, err := filepath.Rel(real, os.Getenv(pulumitest.ToolchainEnv))
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	bin := filepath.Join(cache, name)
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(file, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(bin, file), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("pulumi", "#!/bin/sh\n")
	write("pulumi-resource-kubernetes", "#!/bin/sh\n")
	oldHost := "\x7fELF an old language host"
	write("pulumi-language-go", oldHost)

	install := exec.Command(filepath.Join(pulumitest.RepoRoot(), ".ci", "toolchain", "install.sh"))
	// no go on PATH: a part that was not taken as cached fails the run
	install.Env = append(os.Environ(), "GPU_NODE_POOLS_TOOLCHAIN="+cache, "PATH=/usr/bin:/bin")
	out, err := install.CombinedOutput()
	if err != nil {
		t.Fatalf("install.sh over an old cache: %v\n%s", err, out)
	}
	if lines := strings.Split(strings.TrimSpace(string(out)), "\n"); lines[len(lines)-1] != bin {
		t.Errorf("install.sh's last line %q, want the bin directory %s", lines[len(lines)-1], bin)
	}
	if strings.Contains(string(out), "building") {
		t.Errorf("install.sh built a cached part:\n%s", out)
	}
	if got, _ := os.ReadFile(filepath.Join(bin, "pulumi-language-go.real")); string(got) != oldHost {
		t.Errorf("pulumi-language-go.real holds %q, want the old host", got)
	}

	// the host, as the shim runs it: a script that prints its arguments
	write("pulumi-language-go.real", "#!/bin/sh\necho \"$@\"\n")
	for _, tc := range []struct{ project, want string }{
		{"name: p\nruntime:\n  name: go\n  options:\n    binary: \"./bin/program\" # installed by make\n", "-binary ./bin/program 127.0.0.1:4000"},
		{"name: p\nruntime: go\n", "127.0.0.1:4000"},
		// a binary key outside runtime is not the program's
		{"name: p\nruntime: go\nconfig:\n  x:\n    binary: nope\n", "127.0.0.1:4000"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), []byte(tc.project), 0o644); err != nil {
			t.Fatal(err)
		}
		shim := exec.Command(filepath.Join(bin, "pulumi-language-go"), "127.0.0.1:4000")
		shim.Dir = dir
		got, err := shim.Output()
		if err != nil {
			t.Fatalf("shim: %v", err)
		}
		if strings.TrimSpace(string(got)) != tc.want {
			t.Errorf("with Pulumi.yaml\n%s the host got %q, want %q", tc.project, strings.TrimSpace(string(got)), tc.want)
		}
	}
}

// A part that fails to build fails install.sh, each part on its own and
// both together, and no bin directory is printed as ready: all.sh would
// otherwise export a toolchain without the binary.
func TestInstallFailsWhenAPartFailsToBuild(t *testing.T) {
	t.Parallel()
	for _, parts := range [][]string{{"cli"}, {"kubernetes"}, nil} {
		cache := t.TempDir()
		install := exec.Command(filepath.Join(pulumitest.RepoRoot(), ".ci", "toolchain", "install.sh"), parts...)
		// no go on PATH: every build fails at once
		install.Env = append(os.Environ(), "GPU_NODE_POOLS_TOOLCHAIN="+cache, "PATH=/usr/bin:/bin")
		out, err := install.CombinedOutput()
		if err == nil {
			t.Errorf("install.sh %v with no go succeeded:\n%s", parts, out)
		}
		if strings.Contains(string(out), "ready in") {
			t.Errorf("install.sh %v said a failed build was ready:\n%s", parts, out)
		}
	}
}
