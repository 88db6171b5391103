package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/components/ollama"
	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/components/vectordb"
	"github.com/natron/gpu-node-pools/internal/models"
	"github.com/natron/gpu-node-pools/internal/monitoring"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/config"
)

// readmeSection is the text of one "## " section of the README.
func readmeSection(t *testing.T, section string) string {
	t.Helper()
	return docSection(t, "README.md", section)
}

// docSection is the text of one "## " section of a Markdown file of the
// project (README.md, docs/<page>.md).
func docSection(t *testing.T, file, section string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pulumitest.RepoRoot(), file))
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(b), "\n## "+section+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", file, section)
	}
	text, _, _ = strings.Cut(text, "\n## ")
	return text
}

// The config reference documents every key the config types have
// (config.KeyPaths, from the types the program decodes into): a key added
// without its row fails here, should the generator skip one. Each segment
// of a key's path must be in the reference, inside a code span.
func TestConfigReferenceIsComplete(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(pulumitest.RepoRoot(), "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	ref := string(b)
	spans := map[string]bool{}
	word := regexp.MustCompile(`[A-Za-z][A-Za-z0-9]*`)
	for _, span := range regexp.MustCompile("`[^`]+`").FindAllString(ref, -1) {
		for _, w := range word.FindAllString(span, -1) {
			spans[w] = true
		}
	}
	checked := 0
	for _, k := range config.KeyPaths() {
		_, path, _ := strings.Cut(k.Path, ":")
		for _, seg := range strings.Split(strings.ReplaceAll(path, "[*]", ""), ".") {
			checked++
			if !spans[seg] {
				t.Errorf("the config reference does not document %s (no %q in a code span)", k.Path, seg)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d key segments: the key list is not the config's", checked)
	}
}

// The sizing page's model catalog table is the catalog: a row per model with
// its KV bytes per token and native context as the code computes them.
func TestREADMEModelCatalog(t *testing.T) {
	t.Parallel()
	section := docSection(t, "docs/sizing.md", "Sizing and cost")
	for _, m := range models.Known {
		kv := fmt.Sprint(m.KVBytesPerToken(2))
		if m.Kind() == models.MLA {
			kv += " (MLA)"
		}
		row := fmt.Sprintf("| `%s` | `%s` |", m.Name, m.HuggingFace)
		line := ""
		for _, l := range strings.Split(section, "\n") {
			if strings.HasPrefix(l, row) {
				line = l
			}
		}
		if !strings.HasSuffix(line, fmt.Sprintf("| %s | %d |", kv, m.NativeContext)) {
			t.Errorf("docs/sizing.md: want a row %s ... | %s | %d |, got %q", row, kv, m.NativeContext, line)
		}
	}
}

// The commands of docs/sizing.md run as written, from the project
// root (the rebuilt price table diffs clean against prices.json); a
// command marked as needing internet access (the price refresh) is the
// one exception, and is checked to be marked.
func TestREADMESizingCommands(t *testing.T) {
	t.Parallel()
	section := docSection(t, "docs/sizing.md", "Sizing and cost")
	ran, marked := 0, 0
	for _, chunk := range strings.Split(section, "```sh\n")[1:] {
		code, _, _ := strings.Cut(chunk, "```")
		for _, line := range strings.Split(strings.TrimSpace(code), "\n") {
			if strings.Contains(line, "# needs internet access") {
				marked++
				continue
			}
			cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+line)
			cmd.Dir = pulumitest.RepoRoot()
			cmd.Env = append(os.Environ(), pulumitest.SharedEnv+"="+pulumitest.SharedDir(t))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: %v\n%s", line, err, out)
				continue
			}
			ran++
		}
	}
	if ran < 2 || marked != 1 {
		t.Errorf("ran %d commands and skipped %d marked ones, want 2 and 1", ran, marked)
	}
}

// The docs name every alert the program writes, in code, where they
// describe them: the GPU alerts in docs/platform.md, the vector databases'
// in docs/serving.md's "RAG and light models", whose alert table lists no
// other.
func TestREADMEAlerts(t *testing.T) {
	t.Parallel()
	gpu := platform.AlertRules(platform.Spec{}.Defaults(platform.GPUOperator))
	backedUp := vectordb.Spec{Name: "rag", Size: "1Gi", Backup: "s3://b/rag"}.Defaults()
	qdrant := vectordb.Spec{Name: "search", Kind: vectordb.Qdrant, Size: "1Gi"}.Defaults()
	name := regexp.MustCompile("`([A-Z][A-Za-z0-9]+)`")
	for section, rules := range map[string][]monitoring.Rule{
		"docs/platform.md#The GPU platform layer": gpu,
		"docs/serving.md#RAG and light models":    append(vectordb.AlertRules(backedUp), vectordb.AlertRules(qdrant)...),
	} {
		file, title, _ := strings.Cut(section, "#")
		text := docSection(t, file, title)
		spans, tabled := map[string]bool{}, map[string]bool{}
		for _, m := range name.FindAllStringSubmatch(text, -1) {
			spans[m[1]] = true
		}
		// the first cell of a table row: "| `A` |" or "| `A` / `B` |"
		for _, row := range regexp.MustCompile("(?m)^\\| (`[A-Z][^|]*) \\|").FindAllStringSubmatch(text, -1) {
			for _, m := range name.FindAllStringSubmatch(row[1], -1) {
				tabled[m[1]] = true
			}
		}
		written := map[string]bool{}
		for _, r := range rules {
			written[r.Alert] = true
			if !spans[r.Alert] {
				t.Errorf("%s: the docs do not name alert %s", section, r.Alert)
			}
		}
		for a := range tabled {
			if !written[a] {
				t.Errorf("%s: the table lists alert %s, which the program does not write", section, a)
			}
		}
	}
}

// The README's minimum Kubernetes version is at least what the objects
// the program writes need: Pod Security admission labels (stable in
// v1.25, KEP-2579) and native sidecars, an init container with
// restartPolicy Always, as the Ollama models' API-key proxy is (feature
// gate SidecarContainers, beta and on by default from v1.29: kubernetes
// pkg/features/kube_features.go at v1.29.0, KEP-753). On an older cluster
// the proxy runs as a plain init container that never exits, and the
// model never starts.
func TestREADMEKubernetesVersionCoversTheObjects(t *testing.T) {
	t.Parallel()
	need := 25 // Pod Security labels on every namespace
	values := ollama.Values(ollama.Server{Name: "m", Image: "ollama/ollama:1", ProxyImage: "caddy:2"}, serving.OllamaPod)
	for _, c := range values["initContainers"].([]any) {
		if c.(map[string]any)["restartPolicy"] == "Always" {
			need = max(need, 29)
		}
	}
	m := regexp.MustCompile(`\| Kubernetes 1\.(\d+) or later \|`).FindStringSubmatch(readmeSection(t, "Prerequisites"))
	if m == nil {
		t.Fatal("the README's prerequisites name no minimum Kubernetes version")
	}
	if have, _ := strconv.Atoi(m[1]); have < need {
		t.Errorf("the README asks for Kubernetes 1.%d; the objects need 1.%d", have, need)
	}
}

// Every render directory the project's stacks and the README's new stack
// write is ignored by git: renders go to the GitOps repository, and a
// rendered-<stack>/ left untracked was one git add -A from being committed.
func TestRenderDirectoriesAreIgnored(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dirs := []string{"rendered-acme"} // the README's make stack RENDER_DIR
	for _, stack := range []string{"dev", "prod"} {
		if d := stacktest.Config(t, stack).RenderDir; d != "" {
			dirs = append(dirs, d)
		}
	}
	for _, d := range dirs {
		cmd := exec.Command("git", "check-ignore", "--no-index", "-q", d+"/workload/x.yaml")
		cmd.Dir = pulumitest.RepoRoot()
		if err := cmd.Run(); err != nil {
			t.Errorf("git does not ignore the render directory %s (.gitignore): %v", d, err)
		}
	}
}

// The README's "Sizing and cost" is what the tools print: its commands run
// as written from the project root, the worked example's rows (the table
// under a command, "..." skipping) are lines of that command's output, and
// the accuracy summary is gpu-plan oracles' output, verbatim.
func TestREADMESizingAndCost(t *testing.T) {
	t.Parallel()
	section := readmeSection(t, "Sizing and cost")
	chunks := strings.Split(section, "```sh\n")[1:]
	if len(chunks) < 2 {
		t.Fatalf("%d commands in the section", len(chunks))
	}
	for _, chunk := range chunks {
		code, rest, _ := strings.Cut(chunk, "```")
		line := strings.TrimSpace(code)
		cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+line)
		cmd.Dir = pulumitest.RepoRoot()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", line, err, out)
			continue
		}
		// the plain block right after the command, if any: rows of its output
		if after := strings.TrimLeft(rest, "\n"); strings.HasPrefix(after, "```\n") {
			table, _, _ := strings.Cut(strings.TrimPrefix(after, "```\n"), "```")
			for _, row := range strings.Split(strings.TrimSpace(table), "\n") {
				if row != "..." && !strings.Contains(string(out), row) {
					t.Errorf("the README's row %q is not what %s prints:\n%s", row, line, out)
				}
			}
		}
		if strings.Contains(line, " eval ") && !strings.Contains(string(out), `"outputTokensPerSecondPerGPU"`) {
			t.Errorf("%s printed no JSON fields:\n%s", line, out)
		}
	}
	cmd := exec.Command("go", "run", "./cmd/gpu-plan", "oracles")
	cmd.Dir = pulumitest.RepoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gpu-plan oracles: %v\n%s", err, out)
	}
	if !strings.Contains(section, strings.TrimSpace(string(out))) {
		t.Errorf("the README's accuracy summary is not gpu-plan oracles' output:\n%s", out)
	}
}
