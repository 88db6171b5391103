// Package kyvernotest runs the real Kyverno engine (its CLI, built from the
// Go module by .ci/toolchain/kyverno.sh) over policies and resources: the
// verdicts are Kyverno's own, not a re-implementation.
package kyvernotest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// BinEnv names the directory holding the kyverno binary (make test sets it).
const BinEnv = "GPU_NODE_POOLS_KYVERNO_BIN"

// Verdicts are rule results per resource: "Kind/namespace/name" ->
// "policy/rule" -> pass, fail, skip, warn or error.
type Verdicts map[string]map[string]string

// Outcome is what one Kyverno run gave.
type Outcome struct {
	Verdicts Verdicts
	// Mutated are the resources after mutation, by name.
	Mutated map[string]map[string]any
}

// Apply runs `kyverno apply` with a policy report over the resources and
// returns every rule's verdict and the mutated resources. Resource names
// must be unique. Without the binary it skips (fails in our CI).
func Apply(t testing.TB, policies, resources []map[string]any) Outcome {
	t.Helper()
	bin := os.Getenv(BinEnv)
	if bin == "" {
		pulumitest.Missing(t, "the Kyverno engine needs %s: run `make test`, which builds the Kyverno CLI once (.ci/toolchain/kyverno.sh)", BinEnv)
	}
	dir := t.TempDir()
	pol, res, out := filepath.Join(dir, "policies.yaml"), filepath.Join(dir, "resources.yaml"), filepath.Join(dir, "mutated")
	pulumitest.WriteManifests(t, pol, policies)
	pulumitest.WriteManifests(t, res, resources)
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "kyverno"), "apply", pol, "--resource", res,
		"--policy-report", "--output-format", "json", "--output", out, "--remove-color")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Exit status 1 means "some resource failed", which the verdicts show.
	if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("kyverno apply: %v\n%s", err, stderr.String())
	}
	o := Outcome{Verdicts: Verdicts{}, Mutated: map[string]map[string]any{}}
	text := stdout.String()
	start := strings.Index(text, "{") // after the mutation notes
	if start < 0 {
		t.Fatalf("kyverno apply printed no policy report:\n%s\n%s", text, stderr.String())
	}
	var report struct {
		Results []struct {
			Policy, Rule, Result, Message string
			Resources                     []struct{ Kind, Namespace, Name string }
		}
	}
	if err := json.Unmarshal([]byte(text[start:]), &report); err != nil {
		t.Fatalf("kyverno policy report: %v\n%s", err, text)
	}
	for _, r := range report.Results {
		for _, res := range r.Resources {
			key := res.Kind + "/" + res.Namespace + "/" + res.Name
			if o.Verdicts[key] == nil {
				o.Verdicts[key] = map[string]string{}
			}
			o.Verdicts[key][r.Policy+"/"+r.Rule] = r.Result
		}
	}
	files, err := filepath.Glob(filepath.Join(out, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(b), "\n---") {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			meta, _ := m["metadata"].(map[string]any)
			if name, _ := meta["name"].(string); name != "" {
				o.Mutated[name] = m
			}
		}
	}
	return o
}

// Failures lists every failing or erroring rule, one line each.
func (v Verdicts) Failures() []string {
	var out []string
	for res, rules := range v {
		for rule, result := range rules {
			if result == "fail" || result == "error" {
				out = append(out, fmt.Sprintf("%s: %s %s", res, rule, result))
			}
		}
	}
	sort.Strings(out)
	return out
}
