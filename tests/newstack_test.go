package tests

import (
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/automation"
)

// newcomer runs shell commands in a copy of the project the way a platform
// engineer does from a checkout: make, with the shared assets beside it, the
// pinned toolchain warm in the per-user cache, nothing on PATH of ours.
type newcomer struct {
	t   testing.TB
	dir string
	env []string
}

func newNewcomer(t testing.TB) *newcomer {
	pulumitest.PulumiRoot(t) // the toolchain is built (skips, or fails in CI, without it)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PULUMI_") && !strings.HasPrefix(kv, "GPU_NODE_POOLS_") {
			env = append(env, kv)
		}
	}
	// GOFLAGS only changes what the build cache reuses across copies
	env = append(env, "GPU_NODE_POOLS_SHARED="+pulumitest.SharedDir(t), "GOFLAGS="+pulumitest.CopyGOFLAGS())
	return &newcomer{t: t, dir: pulumitest.CopyProject(t), env: env}
}

// sh runs a bash script in the project; out is stdout and stderr.
func (n *newcomer) sh(script string) (string, error) {
	n.t.Helper()
	cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+script)
	cmd.Dir, cmd.Env = n.dir, n.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// stacks are the stacks the project's backend holds.
func (n *newcomer) stacks() string {
	n.t.Helper()
	out, err := n.sh(`eval "$(make -s env 2>/dev/null)"; export PULUMI_CONFIG_PASSPHRASE=x; pulumi stack ls --json`)
	if err != nil {
		n.t.Fatalf("pulumi stack ls: %v\n%s", err, out)
	}
	return out
}

// resourceLine is a preview's line per resource or a render's per file.
var resourceLine = regexp.MustCompile(`(?m)^ [-+~]  \S+ (\S+ create|added|changed|removed)$`)

// goBlocks are the go code blocks of a Markdown file that are whole
// programs (package main), each as gofmt leaves it.
func goBlocks(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, part := range strings.Split(string(b), "```go\n")[1:] {
		code, _, _ := strings.Cut(part, "```")
		if !strings.HasPrefix(code, "package main") {
			continue
		}
		formatted, err := format.Source([]byte(code))
		if err != nil || string(formatted) != code {
			t.Errorf("%s: a program that gofmt would change (%v):\n%s", path, err, formatted)
		}
		out = append(out, code)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no whole program", path)
	}
	return out
}

// readmeBlocks are the sh code blocks of a README section, comments and
// blank lines dropped.
func readmeBlocks(t *testing.T, section string) []string {
	t.Helper()
	var blocks []string
	for _, chunk := range strings.Split(readmeSection(t, section), "```sh\n")[1:] {
		code, _, _ := strings.Cut(chunk, "```")
		var lines []string
		for _, l := range strings.Split(code, "\n") {
			if l, _, _ = strings.Cut(l, " #"); strings.TrimSpace(l) != "" && !strings.HasPrefix(strings.TrimSpace(l), "#") {
				lines = append(lines, l)
			}
		}
		blocks = append(blocks, strings.Join(lines, "\n"))
	}
	if len(blocks) == 0 {
		t.Fatalf("README section %q has no sh block", section)
	}
	return blocks
}

// The README's commands work as written, in a fresh copy of the project:
// the quick start renders the dev stack, and the new customer stack is
// made, created and rendered with exactly the commands of "A new customer
// stack, step by step" (make stack, then what it printed, with a
// passphrase of our own), offline, on the first try. The console stays
// small: at most one line per resource plus the summaries, no CRD schema,
// no plugin warning.
func TestREADMECommands(t *testing.T) {
	t.Parallel()
	n := newNewcomer(t)
	quick := readmeBlocks(t, "Quick start")[0]
	if out, err := n.sh(quick); err != nil {
		t.Fatalf("quick start %q: %v\n%s", quick, err, out)
	}
	if _, err := os.Stat(filepath.Join(n.dir, "rendered", "workload")); err != nil {
		t.Errorf("the quick start rendered nothing: %v", err)
	}
	// the Automation API's whole program, as docs/automation.md gives it
	example := goBlocks(t, filepath.Join(pulumitest.RepoRoot(), "docs", "automation.md"))[0]
	if err := os.MkdirAll(filepath.Join(n.dir, "automation-example"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.dir, "automation-example", "main.go"), []byte(example), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := n.sh(`eval "$(make -s env)"; go run ./automation-example`); err != nil || !strings.Contains(out, "rendered dev into "+filepath.Join(n.dir, "rendered")+": ") || strings.Contains(out, " 0 changed") {
		t.Errorf("the Automation API example: %v\n%s", err, out)
	}

	steps := readmeBlocks(t, "A new customer stack, step by step")[0]
	steps = strings.Replace(steps, "'<this customer's passphrase>'", "'acme passphrase'", 1)
	makeStack, rest, _ := strings.Cut(steps, "\neval ")
	out, err := n.sh(makeStack)
	if err != nil {
		t.Fatalf("%s: %v\n%s", makeStack, err, out)
	}
	// make stack prints the very steps the README shows next
	for _, l := range strings.Split("eval "+rest, "\n") {
		printed := strings.Replace(l, "'acme passphrase'", "'<this customer's passphrase>'", 1)
		if !strings.Contains(out, strings.TrimSpace(printed)) {
			t.Errorf("make stack did not print the README's step %q:\n%s", l, out)
		}
	}
	file, err := os.ReadFile(filepath.Join(n.dir, "Pulumi.acme.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(file), "encryptionsalt") {
		t.Fatalf("the new stack file carries a salt:\n%s", file)
	}
	out, err = n.sh("eval " + rest)
	if err != nil {
		t.Fatalf("the README's steps: %v\n%s", err, out)
	}
	resources := len(resourceLine.FindAllString(out, -1))
	lines := strings.Count(out, "\n")
	t.Logf("first render of the new stack: %d lines for %d resources", lines, resources)
	switch {
	case resources < 40:
		t.Errorf("the render lists %d resources, want the pool, platform and policies (about 48):\n%s", resources, out)
	case lines > resources+25: // headers, the check, the summary, where the render went
		t.Errorf("%d lines for %d resources: more than one per resource plus the summaries:\n%s", lines, resources, out)
	}
	for _, noise := range []string{"openAPIV3Schema", "warning:", "an unhandled error occurred"} {
		if strings.Contains(out, noise) {
			t.Errorf("the output holds %q:\n%s", noise, out)
		}
	}
	if _, err := os.Stat(filepath.Join(n.dir, "rendered-acme", "management")); err != nil {
		t.Errorf("nothing rendered for the new stack: %v", err)
	}
	if !strings.Contains(n.stacks(), `"acme"`) {
		t.Error("the new stack is not in the backend")
	}

	// and the customer leaves, as "Removing a customer" says
	destroy := strings.Split(readmeBlocks(t, "Removing a customer")[0], "\n")[0]
	out, err = n.sh("export PULUMI_CONFIG_PASSPHRASE='acme passphrase'\necho acme | " + destroy)
	if err != nil {
		t.Fatalf("%s: %v\n%s", destroy, err, out)
	}
	for _, want := range []string{"Type the stack's name (acme)", "Removed stack acme", "rendered into rendered-acme, which you deliver yourself"} {
		if !strings.Contains(out, want) {
			t.Errorf("%s printed no %q:\n%s", destroy, want, out)
		}
	}
	if strings.Contains(n.stacks(), `"acme"`) {
		t.Error("make destroy left the stack in the backend")
	}
	if _, err := os.Stat(filepath.Join(n.dir, "Pulumi.acme.yaml")); !os.IsNotExist(err) {
		t.Errorf("make destroy left the stack file: %v", err)
	}
}

// What stops make preview, before the engine prints anything and before
// the stack exists: config problems, printed once as the program's own
// message; a missing API key where no plugin could generate one; a stack
// file copied with another stack's salt, with a hint. Secrets in plain text
// draw a warning naming the key.
func TestPreviewStopsEarly(t *testing.T) {
	t.Parallel()
	n := newNewcomer(t)
	base := stacktest.NatronRenderHead
	tests := []struct {
		stack, extra string
		want         []string // each exactly once
	}{
		{"broken", `  gpu-node-pools:pools:
    - {name: a100, sku: a100-80gb-x8, minNodes: 0, maxNodes: -1}
  gpu-node-pools:pool: []
`, []string{
			"invalid stack config (2 problems):",
			"  gpu-node-pools:pool: unknown key (did you mean pools?)",
			"  gpu-node-pools:pools[0].maxNodes: must be between 1 and 1000, got -1",
		}},
		{"nokey", `  gpu-node-pools:pools:
    - {name: a100, sku: a100-80gb-x8, minNodes: 0, maxNodes: 2}
  gpu-node-pools:storage: {kind: s3, endpoint: "https://s3.example", accessKey: AKIA-plain, secretKey: {secure: "v1:abc"}}
  gpu-node-pools:models:
    - {name: llama3-8b, pool: a100, source: "s3://models/llama3-8b", parametersB: 8, dtype: bfloat16, tensorParallel: 1,
       maxModelLen: 8192, gpuMemoryUtilization: 0.9, minReplicas: 0, maxReplicas: 2, queueDepthTarget: 5}
`, []string{
			"warning: gpu-node-pools:storage.accessKey is in plain text in Pulumi.nokey.yaml: anyone who reads the file reads it; store it as a secret with pulumi config set --secret --path gpu-node-pools:storage.accessKey <value>",
			"gpu-node-pools:serving.apiKey: not set and the random provider plugin is not installed; set it with pulumi config set --secret --path gpu-node-pools:serving.apiKey \"$(openssl rand -hex 24)\", or install the plugin: pulumi plugin install resource random 4.18.4",
		}},
	}
	// a stack file copied from the dev stack, salt and secure values with it
	dev, err := os.ReadFile(filepath.Join(n.dir, "Pulumi.dev.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tests = append(tests, struct {
		stack, extra string
		want         []string
	}{"copied", string(dev), []string{
		"Pulumi.copied.yaml: its encryptionsalt was made with the development passphrase (a copy of another stack's file?)",
	}}, struct {
		stack, extra string
		want         []string
	}{"nopass", "", []string{ // a valid new stack, no passphrase set
		"stack nopass: no passphrase for its secrets (PULUMI_CONFIG_PASSPHRASE is not set), and only the dev stack may use the development one; export PULUMI_CONFIG_PASSPHRASE=",
	}})
	for _, tc := range tests {
		content := base + tc.extra
		if tc.stack == "copied" {
			content = tc.extra
		}
		if err := os.WriteFile(filepath.Join(n.dir, "Pulumi."+tc.stack+".yaml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		pass := "export PULUMI_CONFIG_PASSPHRASE='not the dev passphrase'\n"
		if tc.stack == "nopass" {
			pass = ""
		}
		out, err := n.sh(pass + "make -s preview STACK=" + tc.stack)
		if err == nil {
			t.Fatalf("%s: make preview succeeded:\n%s", tc.stack, out)
		}
		for _, w := range tc.want {
			if c := strings.Count(out, w); c != 1 {
				t.Errorf("%s: %q appears %d times in:\n%s", tc.stack, w, c, out)
			}
		}
		for _, noise := range []string{"unhandled error", "Previewing update", "program failed"} {
			if strings.Contains(out, noise) {
				t.Errorf("%s: the engine ran or wrapped the error (%q):\n%s", tc.stack, noise, out)
			}
		}
		if strings.Contains(n.stacks(), `"`+tc.stack+`"`) {
			t.Errorf("%s: the invalid stack was created", tc.stack)
		}
	}
}

// A stack that exists already and whose config went bad, previewed with
// plain pulumi outside make (the engine runs the program itself): the
// program's own message, once, naming every key, without the SDK's
// "an unhandled error occurred: program failed" and multierror wrapping.
func TestRawPreviewPrintsTheProgramsMessage(t *testing.T) {
	t.Parallel()
	n := newNewcomer(t)
	stack := stacktest.NatronRenderHead + `  gpu-node-pools:pools:
    - {name: a100, sku: a100-80gb-x8, minNodes: 3, maxNodes: 2}
`
	if err := os.WriteFile(filepath.Join(n.dir, "Pulumi.drifted.yaml"), []byte(stack), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := n.sh(`eval "$(make -s env)"
export PULUMI_CONFIG_PASSPHRASE=drifted
pulumi stack init drifted --secrets-provider passphrase --non-interactive >/dev/null
pulumi preview --stack drifted --non-interactive`)
	if err == nil {
		t.Fatalf("pulumi preview of an invalid stack succeeded:\n%s", out)
	}
	// the progress lines echo the first line; the report holds it once
	_, diagnostics, _ := strings.Cut(out, "Diagnostics:")
	for _, w := range []string{
		"error: invalid stack config (1 problem):\n      gpu-node-pools:pools[0].maxNodes: must be >= minNodes (3), got 2\n",
	} {
		if c := strings.Count(diagnostics, w); c != 1 {
			t.Errorf("%q appears %d times in the diagnostics of:\n%s", w, c, out)
		}
	}
	for _, noise := range []string{"unhandled error", "program failed", "error occurred:"} {
		if strings.Contains(out, noise) {
			t.Errorf("the error is wrapped (%q):\n%s", noise, out)
		}
	}
	// the engine ran the program Pulumi.yaml names (runtime.options.binary:
	// .ci/program.sh, here told to install it into a directory of its own),
	// which go install links only when a source changed
	own := `eval "$(make -s env)"
export PULUMI_CONFIG_PASSPHRASE=drifted GPU_NODE_POOLS_PROGRAM_BIN="$PWD/own-bin"
pulumi preview --stack drifted --non-interactive`
	if out, err := n.sh(own); err == nil {
		t.Fatalf("a preview of the invalid stack succeeded:\n%s", out)
	}
	first := programBuilt(t, filepath.Join(n.dir, "own-bin"))
	if out, err := n.sh(own); err == nil {
		t.Fatalf("another preview of the invalid stack succeeded:\n%s", out)
	}
	// a link writes a new file; go install only touches an unchanged one
	// (Go 1.26.8 src/cmd/go/internal/work/exec.go, BuildInstallFunc)
	if again := programBuilt(t, filepath.Join(n.dir, "own-bin")); !os.SameFile(first, again) {
		t.Error("the unchanged program was linked again for another preview")
	}
}

// Every render writes the complete tree of the current config, whatever an
// earlier render left or the state says: a file deleted from the render
// directory comes back, a file no object owns goes, and the change is
// listed against the last render.
func TestRenderWritesTheWholeTree(t *testing.T) {
	t.Parallel()
	n := newNewcomer(t)
	if out, err := n.sh("make -s preview"); err != nil {
		t.Fatalf("make preview: %v\n%s", err, out)
	}
	// the copy's stackctl is the one installed once for every copy: its
	// own go install found it up to date and linked nothing
	if !sameFile(t, filepath.Join(n.dir, ".pulumi-state", "bin", "stackctl"), pulumitest.InstalledBin(t, "stackctl")) {
		t.Error("make preview linked stackctl again in a copy of unchanged sources")
	}
	manifests, err := filepath.Glob(filepath.Join(n.dir, "rendered", "management", "*", "*machinedeployment*"))
	if err != nil || len(manifests) != 3 {
		t.Fatalf("rendered MachineDeployments %v (%v), want the dev stack's 3", manifests, err)
	}
	gone := manifests[0]
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(n.dir, "rendered", "workload", "stray.yaml")
	if err := os.WriteFile(stray, []byte("kind: ConfigMap\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := n.sh("make -s preview")
	if err != nil {
		t.Fatalf("make preview again: %v\n%s", err, out)
	}
	if _, err := os.Stat(gone); err != nil {
		t.Errorf("the deleted %s was not written again: %v\n%s", filepath.Base(gone), err, out)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("a file no object owns survived the render: %v", err)
	}
	// only the change is listed: the file put back and the one that went
	rel, _ := filepath.Rel(filepath.Join(n.dir, "rendered"), gone)
	if got := resourceLine.FindAllString(out, -1); !slices.Equal(got, []string{" +  " + rel + " added", " -  workload/stray.yaml removed"}) {
		t.Errorf("the second render lists %q, want the file put back and the stray one:\n%s", got, out)
	}
	if !strings.Contains(out, ": 1 added, 0 changed, 1 removed (") {
		t.Errorf("the second render's summary:\n%s", out)
	}
	out, err = n.sh("make -s preview")
	if err != nil || !strings.Contains(out, "unchanged since the last render") || resourceLine.MatchString(out) {
		t.Errorf("a third render of the same config lists files: %v\n%s", err, out)
	}
	// a rendering stack's outputs are in the render directory
	var outputs map[string]any
	readYAML(t, filepath.Join(n.dir, "rendered", automation.OutputsFile), &outputs)
	models, _ := outputs["models"].(map[string]any)
	llama, _ := models["llama3-8b"].(map[string]any)
	if llama["sizing"] == nil || outputs["logCollectorTolerations"] == nil || outputs["cost"] == nil || outputs["apiKey"] != "[secret]" {
		t.Errorf("the render's outputs: %v", outputs)
	}
	// dev's Secrets come from its store through the render's
	// ExternalSecrets: nothing to create by hand, the store entries named
	if strings.Contains(out, "create these") || !strings.Contains(out, "ClusterSecretStore natron-vault") ||
		!strings.Contains(out, "gpu-node-pools/dev/models/gpu-node-pools-api-key  keys: [api-key]") || strings.Contains(out, "RCLONE_CONFIG_SRC_TYPE") {
		t.Errorf("the render's Secret list with externalSecrets set:\n%s", out)
	}
}

// programBuilt is the program the engine ran, as Pulumi.yaml's
// runtime.options.binary (.ci/program.sh) installed it into bin: a language
// host that ignored the option compiled and linked the program itself, for
// every run, and this file never appeared.
func programBuilt(t *testing.T, bin string) os.FileInfo {
	t.Helper()
	info, err := os.Stat(filepath.Join(bin, "gpu-node-pools"))
	if err != nil {
		t.Fatalf("the engine did not run the program through runtime.options.binary: %v", err)
	}
	return info
}

func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	ia, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	ib, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(ia, ib)
}
