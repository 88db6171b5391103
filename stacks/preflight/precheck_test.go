package preflight_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/plan"
	"github.com/natron/gpu-node-pools/stacks/preflight"
)

func load(t *testing.T, stack string, mutate func(raw map[string]string)) *plan.Stack {
	t.Helper()
	cfg, _, err := pulumitest.StackConfig(stack)
	if err != nil {
		t.Fatal(err)
	}
	raw := pulumitest.Unqualified(cfg)
	if mutate != nil {
		mutate(raw)
	}
	p, err := plan.Load(raw, stack)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The plugins a stack needs are named with what to do, only when missing.
func TestPlugins(t *testing.T) {
	t.Parallel()
	none := func(string, string) bool { return false }
	all := func(string, string) bool { return true }
	withoutKey := func(raw map[string]string) { raw["serving"] = "{}" }
	// batch jobs alone register serving's Secrets, the generated key with them
	batchOnly := func(raw map[string]string) { raw["serving"] = "{}"; delete(raw, "models") }
	// a vector database without its credential gets a generated one
	dbWithoutPassword := func(raw map[string]string) {
		raw["vectorDBs"] = `[{"name":"rag","size":"20Gi","clients":["rag-app"]},{"name":"docs","kind":"qdrant","size":"10Gi","clients":["rag-app"]}]`
	}
	tests := []struct {
		name      string
		p         *plan.Stack
		installed preflight.Installed
		want      []string
	}{
		{"dev brings its key", load(t, "dev", nil), none, nil},
		{"dev without a key", load(t, "dev", withoutKey), none, []string{"gpu-node-pools:serving.apiKey: not set and the random provider plugin is not installed"}},
		{"dev without a key, random installed", load(t, "dev", withoutKey), all, nil},
		{"batch jobs without a key", load(t, "dev", batchOnly), none, []string{"gpu-node-pools:serving.apiKey: not set and the random provider plugin is not installed"}},
		{"vector databases without credentials", load(t, "dev", dbWithoutPassword), none, []string{
			"gpu-node-pools:vectorDBs[0].password: not set and the random provider plugin is not installed; set it with pulumi config set --secret --path gpu-node-pools:vectorDBs[0].password",
			"gpu-node-pools:vectorDBs[1].apiKey: not set"}},
		{"vector databases without credentials, random installed", load(t, "dev", dbWithoutPassword), all, nil},
		{"prod on a bare machine", load(t, "prod", nil), none, []string{
			"gpu-node-pools:serving.apiKey: not set", "gpu-node-pools:target: aks needs the azure-native provider plugin 2.82.0; on a machine with internet access: pulumi plugin install resource azure-native 2.82.0"}},
		{"prod with its plugins", load(t, "prod", nil), all, nil},
	}
	for _, tt := range tests {
		got := preflight.Plugins(tt.p, tt.installed)
		if len(got) != len(tt.want) {
			t.Errorf("%s: %q, want %d problems", tt.name, got, len(tt.want))
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tt.want[i]) {
				t.Errorf("%s: %q, want prefix %q", tt.name, got[i], tt.want[i])
			}
		}
	}
}

// The random plugin named in the messages is the SDK's version in go.mod
// (the engine asks for exactly that one).
func TestRandomVersionIsTheSDKs(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(pulumitest.RepoRoot(), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	want := "github.com/pulumi/pulumi-random/sdk/v4 v" + preflight.RandomVersion + "\n"
	if !strings.Contains(string(b), want) {
		t.Errorf("go.mod does not require %q: RandomVersion is stale", strings.TrimSpace(want))
	}
}

// The summary names what a reviewer weighs: every pool with its shape and
// bounds, every chart at its version, every model and batch job.
func TestSummary(t *testing.T) {
	t.Parallel()
	got := strings.Join(preflight.Summary(load(t, "prod", nil)), "\n")
	for _, want := range []string{
		"pool a100: Standard_NC24ads_A100_v4, 1 × nvidia.com/gpu per node, 0-4 nodes",
		"pool nd96: Standard_ND96amsr_A100_v4, 16 × nvidia.com/gpu per node, 0-2 nodes, 47844 USD a month at maxNodes, 0 expected",
		"pool h100x8: Standard_ND96isr_H100_v5, 8 × nvidia.com/gpu per node, 0-2 nodes, 143547 USD a month at maxNodes, 71774 expected",
		"charts: nvidia-device-plugin 0.20.0, dcgm-exporter 4.8.2, vllm-stack 0.1.12, keda 2.20.2, keda-add-ons-http 0.15.0",
		"model llama3-70b on h100x8: tensor parallel 4 (not set: the smallest that holds concurrency 1 × maxModelLen 131072; tensorParallel 2 holds not one such stream), maxModelLen 131072, KV cache 423616 tokens (3.2 × maxModelLen), 1-4 replicas",
		`batch job embed-nightly on a100: 1 GPUs, "0 2 * * *"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}

// One run says everything: a config problem does not hide the missing API
// key that only the random plugin could generate.
func TestStackReportsPluginsWithConfigProblems(t *testing.T) {
	t.Parallel()
	stackFile := stacktest.NatronRenderHead + `  gpu-node-pools:pools:
    - {name: a100, sku: a100-80gb-x8, minNodes: 0, maxNodes: -1}
  gpu-node-pools:storage: {kind: s3, endpoint: "https://s3.example", accessKey: {secure: "v1:abc"}, secretKey: {secure: "v1:abc"}}
  gpu-node-pools:models:
    - {name: llama3-8b, pool: a100, source: "s3://models/llama3-8b", parametersB: 8, dtype: bfloat16, tensorParallel: 1,
       maxModelLen: 8192, gpuMemoryUtilization: 0.9, minReplicas: 0, maxReplicas: 2, queueDepthTarget: 5}
`
	dir := stacktest.Project(t, map[string]string{"beta": stackFile})
	r := preflight.Stack(dir, "beta", func(string, string) bool { return false })
	all := strings.Join(r.Errors, "\n")
	for _, want := range []string{"gpu-node-pools:pools[0].maxNodes", "gpu-node-pools:serving.apiKey: not set and the random provider plugin is not installed"} {
		if !strings.Contains(all, want) {
			t.Errorf("the check does not say %q:\n%s", want, all)
		}
	}
}

// A size the user did not write is explained (a high concurrency is why a
// model takes two GPUs a replica), and a model that fits nowhere is
// reported against the model, with every way it would fit.
func TestFitIsExplainedAgainstWhatTheUserWrote(t *testing.T) {
	t.Parallel()
	head := stacktest.NatronRenderHead + `  gpu-node-pools:serving: {apiKey: {secure: "v1:abc"}}
  gpu-node-pools:pools:
    - {name: a100, sku: a100-80gb-x8, minNodes: 0, maxNodes: 2}
  gpu-node-pools:storage: {kind: s3, endpoint: "https://s3.example", accessKey: {secure: "v1:abc"}, secretKey: {secure: "v1:abc"}}
  gpu-node-pools:models:
`
	dir := stacktest.Project(t, map[string]string{
		"busy": head + `    - {name: chat, pool: a100, source: "s3://models/x", model: llama-3.1-8b, maxModelLen: 8192, concurrency: 64}
`,
		"huge": head + `    - {name: big, pool: a100, source: "s3://models/x", model: llama-3.1-405b, maxModelLen: 8192}
`,
	})
	all := func(string, string) bool { return true }
	busy := preflight.Stack(dir, "busy", all)
	if err := busy.Err(); err != nil {
		t.Fatal(err)
	}
	summary := strings.Join(preflight.Summary(busy.Plan), "\n")
	if want := "model chat on a100: tensor parallel 2 (not set: the smallest that holds concurrency 64 × maxModelLen 8192; tensorParallel 1 holds "; !strings.Contains(summary, want) ||
		!strings.Contains(summary, "or less (more replicas for more users) keeps each replica on 1 GPUs") {
		t.Errorf("the chosen tensor parallelism is not explained:\n%s", summary)
	}
	huge := preflight.Stack(dir, "huge", all)
	got := strings.Join(huge.Errors, "\n")
	for _, want := range []string{
		"gpu-node-pools:models[0]: does not fit pool a100 at any tensorParallel [1 2 4 8]: big at maxModelLen 8192 needs 829 GiB",
		"what fits: quantization awq (a 4-bit AWQ checkpoint) at tensorParallel 4",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "tensorParallel: Invalid") {
		t.Errorf("reported against tensorParallel, which the file does not set:\n%s", got)
	}
}
