package tests

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/program"
	"github.com/natron/gpu-node-pools/stacks/stackfile"
)

// setCommand is one command add-model lists: pulumi config set of a key.
var setCommand = regexp.MustCompile(`(?m)^\s+(pulumi config set (?:--secret )?--path (\S+) (.+) --stack \S+)$`)

// A planner design goes into a fresh make stack file with stackctl
// add-model, which keeps the file's comments and lists what the stack
// still needs; running exactly those commands (each <value> filled in)
// makes a stack that previews on the first try. On bare metal through the
// real engine (make preview renders it); the AKS stack cannot preview here
// (the azure-native plugin is not built), so its check must name nothing
// but that plugin, and the program must register its pool and model
// (with the engine's mocks).
func TestAddModelPreviewsFirstTry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, makeStack, plan string
		values                map[string]string // <value> by key
		preview               bool
	}{
		{"natron", "make stack NAME=acme TARGET=natron CLUSTER=acme K8S_VERSION=v1.33.4 IMAGE_URL=https://images.example/u.qcow2 " +
			"IMAGE_CHECKSUM=https://images.example/u.qcow2.sha256sum RENDER_DIR=rendered-acme",
			"--model llama-3.1-8b --context 8192 --concurrency 8 --target natron --price h100-80gb-x8=20 --price a100-80gb-x8=11",
			map[string]string{"gpu-node-pools:storage.endpoint": "https://s3.natron.example"}, true},
		{"aks", "make stack NAME=acme TARGET=aks CLUSTER=aks-acme RESOURCE_GROUP=rg-acme",
			"--model llama-3.1-70b --context 8192 --concurrency 16 --region westus2",
			map[string]string{"gpu-node-pools:storage.account": "acmemodels", "gpu-node-pools:serving.downloadCIDRs[0]": "10.40.8.0/24"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := newNewcomer(t)
			steps, err := n.sh(tc.makeStack)
			if err != nil {
				t.Fatalf("%s: %v\n%s", tc.makeStack, err, steps)
			}
			before := readText(t, stackfile.Path(n.dir, "acme"))
			out, err := n.sh("go run ./cmd/gpu-plan " + tc.plan + " --format yaml | go run ./cmd/stackctl add-model -stack acme")
			if err != nil {
				t.Fatalf("add-model: %v\n%s", err, out)
			}
			t.Log(out)
			after := readText(t, stackfile.Path(n.dir, "acme"))
			for _, line := range strings.Split(before, "\n") {
				if c := strings.TrimSpace(line); strings.HasPrefix(c, "#") && !strings.Contains(after, c) {
					t.Errorf("add-model lost the comment %q", c)
				}
			}
			// make stack's steps (stack init), then add-model's commands
			script := []string{`eval "$(make -s env)"`, "export PULUMI_CONFIG_PASSPHRASE='acme passphrase'", "pulumi stack init acme --secrets-provider passphrase"}
			sets := setCommand.FindAllStringSubmatch(out, -1)
			if len(sets) < 2 {
				t.Fatalf("add-model listed %d commands, want the weights store's and the API key's:\n%s", len(sets), out)
			}
			for _, m := range sets {
				value, ok := tc.values[m[2]]
				if !ok {
					value = "test-" + strings.NewReplacer(":", "-", ".", "-").Replace(m[2])
				}
				script = append(script, strings.Replace(m[1], "<value>", value, 1)+" >/dev/null")
			}
			if tc.preview {
				script = append(script, "make preview STACK=acme")
			} else {
				script = append(script, "go run ./cmd/stackctl check -stack acme || true")
			}
			out, err = n.sh(strings.Join(script, "\n"))
			if err != nil {
				t.Fatalf("the listed commands, then preview: %v\n%s", err, out)
			}
			if tc.preview {
				if !strings.Contains(out, "Rendered stack acme") {
					t.Errorf("no render:\n%s", out)
				}
				return
			}
			// AKS: only the plugin this machine cannot have is missing
			problems := problemLines(out)
			if len(problems) != 1 || !strings.Contains(problems[0], "azure-native provider plugin") {
				t.Errorf("AKS stack after add-model's commands: %q\n%s", problems, out)
			}
			f, err := stackfile.Read(n.dir, "acme", pulumitest.SecretMarker)
			if err != nil {
				t.Fatal(err)
			}
			m, err := pulumitest.Run(program.Program, "gpu-node-pools", "acme", f.Raw, secureBlocks(f.Secure))
			if err != nil {
				t.Fatalf("the program on the AKS stack: %v", err)
			}
			var pools, servers int
			for _, r := range m.Resources() {
				switch {
				case strings.HasSuffix(r.Type, ":AgentPool") && r.Name == "serve-agentpool":
					pools++
				case r.Type == "kubernetes:helm.sh/v4:Chart" && r.Name == "serving-llama-3-1-70b":
					servers++
				}
			}
			if pools != 1 || servers == 0 {
				t.Errorf("the AKS stack registers %d agent pools named serve and %d model servers", pools, servers)
			}
		})
	}
}

// problemLines are the lines of stackctl check's output that name a key.
func problemLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "gpu-node-pools:") {
			lines = append(lines, l)
		}
	}
	return lines
}

// secureBlocks are the blocks that hold a secure value.
func secureBlocks(paths []string) []string {
	var out []string
	for _, p := range paths {
		block, _, _ := strings.Cut(p, ".")
		out = append(out, block)
	}
	return out
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
