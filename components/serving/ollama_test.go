package serving_test

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/components/ollama"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/testkit/fieldtest"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/pooltest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// The file sizes Ollama's library lists for its default tags (ollama.com/
// library/<model>/tags, decimal GB) come out of the fit check's widths
// within 6 %: the widths are llama-quantize's at Llama-3-8B, and models
// with smaller vocabularies store a little less around their layers.
func TestOllamaWeightsAgainstTheLibrary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		source, quant string
		listedGB      float64
	}{
		{"llama3.1:8b", "Q4_K_M", 4.9},
		{"llama3.1", "Q4_K_M", 4.9},
		{"llama3.1:70b", "Q4_K_M", 43},
		{"llama3.2:3b", "Q4_K_M", 2.0},
		{"llama3.2:1b", "Q8_0", 1.3},
		{"qwen2.5:7b", "Q4_K_M", 4.7},
		{"qwen2.5:14b", "Q4_K_M", 9.0},
		{"qwen3:8b", "Q4_K_M", 5.2},
		{"gemma2:9b", "Q4_0", 5.4},
		{"mistral:7b", "Q4_0", 4.1},
		{"llama3.1:8b-instruct-q8_0", "Q8_0", 8.5},
		{"llama3.1:8b-instruct-fp16", "F16", 16},
	} {
		srv, sized := serving.NewOllamaServer(serving.ModelSpec{Name: "m", Runtime: serving.Ollama, Source: tc.source}, nil, serving.Options{}, "")
		if !sized {
			t.Errorf("%s: not sized", tc.source)
			continue
		}
		if srv.Quantization != tc.quant {
			t.Errorf("%s: quantization %s, want %s", tc.source, srv.Quantization, tc.quant)
		}
		if got := srv.Weights(); math.Abs(got-tc.listedGB)/tc.listedGB > 0.06 {
			t.Errorf("%s: %.2f GB, the library lists %.1f GB", tc.source, got, tc.listedGB)
		}
	}
	// llama-quantize's own figure for its reference model, in GiB
	srv, _ := serving.NewOllamaServer(serving.ModelSpec{Name: "m", Runtime: serving.Ollama, Source: "acme/llama3-8b:q4_K_M", ParametersB: 8.03}, nil, serving.Options{}, "")
	if gib := srv.Weights() * 1e9 / (1 << 30); math.Abs(gib-4.58) > 0.005 {
		t.Errorf("Llama-3-8B Q4_K_M: %.3f GiB, llama-quantize prints 4.58G", gib)
	}
	if _, sized := serving.NewOllamaServer(serving.ModelSpec{Name: "m", Runtime: serving.Ollama, Source: "acme/custom"}, nil, serving.Options{}, ""); sized {
		t.Error("a model with no size anywhere was sized")
	}
}

func ollamaPools(t *testing.T) map[string]gpupool.Facts {
	t.Helper()
	out := map[string]gpupool.Facts{}
	for _, p := range pooltest.Facts(t, pooltest.Natron,
		gpupool.Spec{Name: "slices", SKU: "a100-80gb-x8", MaxNodes: 1, MIGProfile: "MIG1g"},
		gpupool.Spec{Name: "shared", SKU: "a100-80gb-x4", MaxNodes: 1, TimeSlicing: 4},
		gpupool.Spec{Name: "whole", SKU: "h100-80gb-x8", MaxNodes: 1}) {
		out[p.Name] = p
	}
	return out
}

// The fit check knows Ollama's sizes: file, f16 KV cache of context ×
// parallel tokens, runtime, against one GPU resource of the pool.
func TestOllamaFit(t *testing.T) {
	t.Parallel()
	pools := ollamaPools(t)
	p := field.NewPath("models").Index(0)
	for _, tc := range []struct {
		name, source, pool string
		maxModelLen        int
		want               []string
	}{
		{"8b on a 10 GB MIG slice", "llama3.1:8b", "slices", 0, nil},
		{"70b on a MIG slice", "llama3.1:70b", "slices", 0, []string{"models[0].pool: Invalid value: \"slices\": does not hold m (llama3.1:70b)"}},
		{"fp16 8b on a slice", "llama3.1:8b-instruct-fp16", "slices", 0, []string{"models[0].pool: Invalid value"}},
		{"fp16 8b on a quarter of an 80 GB A100", "llama3.1:8b-instruct-fp16", "shared", 0, nil},
		{"its full context there", "llama3.1:8b-instruct-fp16", "shared", 131072, []string{"models[0].pool: Invalid value"}},
		{"70b on a whole H100", "llama3.3:70b", "whole", 8192, nil},
		{"on CPU nodes nothing is refused", "llama3.1:70b", "", 0, nil},
	} {
		var pool *gpupool.Facts
		if tc.pool != "" {
			pp := pools[tc.pool]
			pool = &pp
		}
		srv, _ := serving.NewOllamaServer(serving.ModelSpec{Name: "m", Runtime: serving.Ollama, Source: tc.source, Pool: tc.pool, MaxModelLen: tc.maxModelLen}, pool, serving.Options{}, "nvidia")
		t.Run(tc.name, func(t *testing.T) { fieldtest.Expect(t, ollama.Fit(p, srv), tc.want...) })
	}
	// the numbers: llama3.1:8b at 4096 tokens is 4.58 GiB of file, 0.5 GiB
	// of KV (32 layers × 8 KV heads × 128 × 2 × 2 bytes per token)
	srv, _ := serving.NewOllamaServer(serving.ModelSpec{Name: "m", Runtime: serving.Ollama, Source: "llama3.1:8b"}, nil, serving.Options{}, "")
	m := srv.Memory()
	if math.Abs(m.KVGiB-0.5) > 1e-9 || math.Abs(m.WeightsGiB-4.58) > 0.01 {
		t.Errorf("llama3.1:8b: %+v", m)
	}
}

func TestOllamaValidate(t *testing.T) {
	t.Parallel()
	p := field.NewPath("models").Index(1)
	zero := 0
	for _, tc := range []struct {
		name string
		m    serving.ModelSpec
		want []string
	}{
		{"library model on CPU", serving.ModelSpec{Name: "dev", Runtime: serving.Ollama, Source: "llama3.2:3b", Hostname: "dev.acme.example"}, nil},
		{"unknown runtime", serving.ModelSpec{Name: "dev", Runtime: "tgi", Source: "x"}, []string{`models[1].runtime: Unsupported value: "tgi": must be one of vllm, ollama`}},
		{"not an Ollama source", serving.ModelSpec{Name: "dev", Runtime: serving.Ollama, Source: "s3://m/llama"}, []string{"models[1].source: Invalid value: \"s3://m/llama\": must be an Ollama model"}},
		{"no source", serving.ModelSpec{Name: "dev", Runtime: serving.Ollama}, []string{"models[1].source: Invalid value: \"\": must be an Ollama model"}},
		{"vLLM's keys", serving.ModelSpec{Name: "dev", Runtime: serving.Ollama, Source: "llama3.2", Dtype: "bfloat16", Quantization: "awq", TensorParallel: 2, GPUMemoryUtilization: 0.9, QueueDepthTarget: 3},
			[]string{"models[1].dtype: Forbidden", "models[1].quantization: Forbidden", "models[1].tensorParallel: Forbidden", "models[1].gpuMemoryUtilization: Forbidden", "models[1].queueDepthTarget: Forbidden"}},
		{"replicas", serving.ModelSpec{Name: "dev", Runtime: serving.Ollama, Source: "llama3.2", MinReplicas: &zero, MaxReplicas: 3},
			[]string{"models[1].minReplicas: Invalid value: 0: must be 1", "models[1].maxReplicas: Invalid value: 3: must be 1"}},
		{"nodeSelector with a pool", serving.ModelSpec{Name: "dev", Runtime: serving.Ollama, Source: "llama3.2", Pool: "infer", NodeSelector: map[string]string{"a": "b"}},
			[]string{"models[1].nodeSelector: Forbidden"}},
		{"unknown catalog model", serving.ModelSpec{Name: "dev", Runtime: serving.Ollama, Source: "acme/x", CatalogModel: "gpt-5"}, []string{"models[1].model: Unsupported value: \"gpt-5\""}},
		{"vLLM model with a nodeSelector", serving.ModelSpec{Name: "big", Pool: "infer", Source: "s3://m/l", CatalogModel: "llama-3.1-8b", NodeSelector: map[string]string{"a": "b"}},
			[]string{"models[1].nodeSelector: Forbidden"}},
	} {
		t.Run(tc.name, func(t *testing.T) { fieldtest.Expect(t, tc.m.Validate(p, serving.S3), tc.want...) })
	}
}

func ollamaServer(t *testing.T, pool string) ollama.Server {
	t.Helper()
	var pp *gpupool.Facts
	if pool != "" {
		p := ollamaPools(t)[pool]
		pp = &p
	}
	o := serving.Options{}.Defaults("cephfs", serving.Cilium)
	srv, sized := serving.NewOllamaServer(serving.ModelSpec{Name: "llama-dev", Runtime: serving.Ollama, Source: "llama3.2:3b", Pool: pool, MaxModelLen: 8192, Concurrency: 2}, pp, o, "nvidia")
	if !sized {
		t.Fatal("not sized")
	}
	return srv
}

func renderOllama(t *testing.T, srv ollama.Server) (pod, svc map[string]any) {
	t.Helper()
	rel := serving.OllamaRelease(helm.Source{}, srv, serving.OllamaChart)
	for _, o := range rel.Apply(helmtest.RenderRelease(t, filepath.Join(pulumitest.SharedDir(t), "charts"), rel, "models")) {
		switch o["kind"] {
		case "Deployment":
			pod = get(o, "spec", "template", "spec").(map[string]any)
		case "Service":
			svc = o
		case "Pod":
			t.Errorf("the chart renders a test Pod %v", get(o, "metadata", "name"))
		}
	}
	if pod == nil || svc == nil {
		t.Fatal("the chart rendered no Deployment or Service")
	}
	return pod, svc
}

func containerNamed(t *testing.T, pod map[string]any, list, name string) map[string]any {
	t.Helper()
	cs, _ := pod[list].([]any)
	for _, c := range cs {
		if c.(map[string]any)["name"] == name {
			return c.(map[string]any)
		}
	}
	t.Fatalf("no %s %q in %v", list, name, cs)
	return nil
}

// The real Ollama chart with the program's values and patches: a
// restricted pod that waits for its pull Job, the proxy as a sidecar
// holding the model's key from the API-key Secret, Ollama on loopback with
// its probes through the proxy, the Service sent to the proxy, and on a
// GPU pool the pool's resource, placement and runtime class; on CPU nodes
// none of them.
func TestOllamaChartRendersTheServer(t *testing.T) {
	t.Parallel()
	for _, pool := range []string{"slices", "shared", ""} {
		t.Run("pool="+pool, func(t *testing.T) {
			t.Parallel()
			srv := ollamaServer(t, pool)
			pod, svc := renderOllama(t, srv)
			if level, err := podsecurity.Needs(pod); err != nil || level != podsecurity.Restricted {
				v, _ := podsecurity.Violations(podsecurity.Restricted, pod)
				t.Fatalf("Ollama's pod needs %s (%v), want restricted: %v", level, err, v)
			}
			inits := pod["initContainers"].([]any)
			if len(inits) != 2 || inits[0].(map[string]any)["name"] != "wait-for-model" {
				t.Fatalf("init containers %v: the wait for the pull must come first", inits)
			}
			if wait := strings.Join(toStrings(inits[0].(map[string]any)["command"]), " "); !strings.Contains(wait, srv.Marker()) {
				t.Errorf("the server does not wait for its source's pull: %q", wait)
			}
			proxy := containerNamed(t, pod, "initContainers", ollama.ProxyContainer)
			if proxy["restartPolicy"] != "Always" {
				t.Error("the proxy is not a sidecar: it would block the pod's start")
			}
			keyFrom := get(proxy["env"].([]any)[2], "valueFrom", "secretKeyRef")
			if d := cmp.Diff(map[string]any{"name": serving.APIKeySecret, "key": serving.APIKeyField}, keyFrom); d != "" {
				t.Errorf("proxy key (-want +got):\n%s", d)
			}
			main := containerNamed(t, pod, "containers", "ollama")
			env := map[string]any{}
			for _, e := range main["env"].([]any) {
				env[e.(map[string]any)["name"].(string)] = e.(map[string]any)["value"]
			}
			for k, v := range map[string]any{"OLLAMA_CONTEXT_LENGTH": "8192", "OLLAMA_NUM_PARALLEL": "2", "HOME": ollama.Home, "OLLAMA_KEEP_ALIVE": "-1",
				"OLLAMA_HOST": fmt.Sprintf("127.0.0.1:%d", ollama.Port)} {
				if env[k] != v {
					t.Errorf("env %s=%v, want %v", k, env[k], v)
				}
			}
			if cmd := strings.Join(toStrings(get(main, "lifecycle", "postStart", "exec", "command")), " "); !strings.Contains(cmd, "ollama run llama-dev") {
				t.Errorf("the model is not loaded before the pod is ready: postStart %q", cmd)
			}
			for _, probe := range []string{"livenessProbe", "readinessProbe"} {
				if port := get(main, probe, "httpGet", "port"); fmt.Sprint(port) != fmt.Sprint(ollama.ProxyPort) {
					t.Errorf("%s reads port %v, want the proxy's %d: Ollama listens on loopback", probe, port, ollama.ProxyPort)
				}
			}
			if get(pod, "volumes").([]any)[0].(map[string]any)["persistentVolumeClaim"].(map[string]any)["claimName"] != srv.Claim() {
				t.Errorf("model store is not the program's claim: %v", pod["volumes"])
			}
			limits := get(main, "resources", "limits").(map[string]any)
			if pool == "" {
				if _, gpu := limits["nvidia.com/gpu"]; gpu || pod["tolerations"] != nil || pod["runtimeClassName"] != nil {
					t.Errorf("a CPU model asks for GPU things: limits %v, tolerations %v, runtime %v", limits, pod["tolerations"], pod["runtimeClassName"])
				}
				if d := cmp.Diff(gpupool.AvoidGPUNodes(), get(pod, "affinity", "nodeAffinity")); d != "" {
					t.Errorf("CPU affinity (-want +got):\n%s", d)
				}
			} else {
				p := ollamaPools(t)[pool]
				if fmt.Sprint(limits[p.GPUResource]) != "1" {
					t.Errorf("GPU limit %v=%v, want 1", p.GPUResource, limits[p.GPUResource])
				}
				if pod["runtimeClassName"] != "nvidia" {
					t.Errorf("runtimeClassName %v", pod["runtimeClassName"])
				}
				if d := cmp.Diff(kube.AnyMap(p.NodeSelector), pod["nodeSelector"]); d != "" {
					t.Errorf("nodeSelector (-want +got):\n%s", d)
				}
				tolerated := false
				for _, tol := range pod["tolerations"].([]any) {
					tol := tol.(map[string]any)
					tolerated = tolerated || (tol["key"] == gpupool.GPUTaintKey && tol["value"] == gpupool.GPUTaintValue)
				}
				if !tolerated {
					t.Errorf("no toleration of %s: %v", gpupool.GPUTaint, pod["tolerations"])
				}
			}
			// the patches send the chart's Service to the proxy
			port := get(svc, "spec", "ports").([]any)[0].(map[string]any)
			if fmt.Sprint(port["targetPort"]) != fmt.Sprint(ollama.ProxyPort) || port["port"] == nil {
				t.Errorf("Service port after the patches: %v", port)
			}
		})
	}
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// fakeOllama is an `ollama` that keeps its store in a directory: show
// succeeds for what was pulled or copied, and every call is logged.
const fakeOllama = `#!/bin/sh
echo "$*" >> "$STORE/calls"
case "$1" in
serve) exec sleep 30 ;;
list) exit 0 ;;
show) [ -f "$STORE/$(echo "$2" | tr '/:' '__')" ] ;;
pull) touch "$STORE/$(echo "$2" | tr '/:' '__')" ;;
cp) touch "$STORE/$(echo "$3" | tr '/:' '__')" ;;
esac
`

// The pull Job's script, as rendered, run twice against the same store:
// the first run pulls, the second (a rerun, a second up) pulls nothing;
// both leave the model under the config's name and mark the store as
// holding the source, which the server waits for.
func TestOllamaPullsOnce(t *testing.T) {
	t.Parallel()
	srv := ollamaServer(t, "")
	job := ollama.PullJob("models", srv, serving.OllamaPod, serving.OllamaPullPods(srv))
	script := toStrings(get(job, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["command"])[2]
	script = strings.ReplaceAll(script, ollama.Home+"/", "/tmp/")
	bin, store := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "ollama"), []byte(fakeOllama), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func() []string {
		os.Remove(filepath.Join(store, "calls"))
		cmd := exec.Command("sh", "-c", strings.ReplaceAll(script, "/tmp/", store+"/"))
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "STORE="+store)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pull script: %v\n%s", err, out)
		}
		calls, _ := os.ReadFile(filepath.Join(store, "calls"))
		return strings.Split(strings.TrimSpace(string(calls)), "\n")
	}
	pulls := func(calls []string) int {
		n := 0
		for _, c := range calls {
			if strings.HasPrefix(c, "pull ") {
				n++
			}
		}
		return n
	}
	if first := run(); pulls(first) != 1 {
		t.Fatalf("first start: %d pulls, want 1: %q", pulls(first), first)
	}
	second := run()
	if pulls(second) != 0 {
		t.Errorf("second start pulled again: %q", second)
	}
	if _, err := os.Stat(filepath.Join(store, "llama-dev")); err != nil || second[len(second)-1] != "cp llama3.2:3b llama-dev" {
		t.Errorf("the model is not named after the config: %q", second)
	}
	if _, err := os.Stat(filepath.Join(store, strings.TrimPrefix(srv.Marker(), ollama.Home+"/"))); err != nil {
		t.Errorf("the pull does not mark the store for the server: %v", err)
	}
}
