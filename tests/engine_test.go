package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/components/vectordb"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// devPassphrase is the documented development passphrase; Pulumi.dev.yaml
// carries the salt made with it.
const devPassphrase = "gpu-node-pools-dev"

// The dev stack through the real CLI, Go language host and Kubernetes
// provider, exactly as `make preview` runs it, in a throwaway backend.
func TestEngineDevStack(t *testing.T) {
	t.Parallel()
	root := pulumitest.PulumiRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	dir := pulumitest.CopyProject(t)
	backend := t.TempDir()
	env := pulumitest.EngineEnv(t, root, "file://"+backend)
	env["PULUMI_CONFIG_PASSPHRASE"] = devPassphrase
	cmd, err := auto.NewPulumiCommand(&auto.PulumiCommandOptions{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	s, err := auto.UpsertStackLocalSource(ctx, "dev", dir, auto.Pulumi(cmd), auto.EnvVars(env))
	if err != nil {
		t.Fatal(err)
	}
	// A known marker in every secret config value: it must never show up
	// in plain text in the state, the outputs or the rendered files.
	for _, k := range []string{"natron.kubeconfig", "natron.managementKubeconfig", "storage.accessKey", "storage.secretKey", "serving.apiKey"} {
		v := auto.ConfigValue{Value: pulumitest.SecretMarker + "-" + k, Secret: true}
		if err := s.SetConfigWithOptions(ctx, "gpu-node-pools:"+k, v, &auto.ConfigOptions{Path: true}); err != nil {
			t.Fatal(err)
		}
	}

	var seen []string
	var mu sync.Mutex
	evs := make(chan events.EngineEvent)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range evs {
			// Chart children (every object of the GPU operator chart) are
			// checked in the rendered files; here the program's own.
			if e.ResourcePreEvent != nil && !strings.Contains(e.ResourcePreEvent.Metadata.URN, "helm.sh/v4:Chart$") {
				mu.Lock()
				seen = append(seen, e.ResourcePreEvent.Metadata.Type+"::"+e.ResourcePreEvent.Metadata.URN[strings.LastIndex(e.ResourcePreEvent.Metadata.URN, "::")+2:])
				mu.Unlock()
			}
		}
	}()
	pre, err := s.Preview(ctx, optpreview.EventStreams(evs))
	<-done
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	// The Helm chart component brings the engine's built-in pulumi provider.
	want := append([]string{"pulumi:pulumi:Stack::gpu-node-pools-dev", "pulumi:providers:pulumi::default", k8sProvider + "::management", k8sProvider + "::workload"},
		platformResources("gpu-operator")...)
	want = append(want, servingResources([]string{"llama3-8b"}, []string{"llama3-8b"}, nil, []string{"finetune-nightly"}, false, true, serving.Cilium)...)
	want = append(want, policyResources()...)
	want = append(want, loggingResources()...)
	want = append(want, backupResources()...)
	want = append(want, gitopsResources()...)
	want = append(want, vectorResources()...)
	want = append(want, ollamaResources("llama-dev")...)
	for _, p := range []string{"infer", "train", "notebook"} {
		want = append(want, metalPoolType+"::"+p, mdType+"::"+p+"-deployment", kctType+"::"+p+"-bootstrap", m3mtType+"::"+p+"-machines")
	}
	sort.Strings(want)
	sort.Strings(seen)
	if !slices.Equal(want, seen) {
		t.Fatalf("preview would touch\n  %v\nwant\n  %v", seen, want)
	}
	if pre.ChangeSummary["create"] <= len(want) {
		t.Errorf("preview summary %v, want %d creates plus the chart's objects", pre.ChangeSummary, len(want))
	}

	up, err := s.Up(ctx)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	checkRendered(t, filepath.Join(dir, "rendered"))

	// Outputs: right values, and nothing secret leaks through them.
	if up.Outputs["target"].Value != "natron" || up.Outputs["renderDir"].Value != "rendered" || up.Outputs["protect"].Value != false {
		t.Errorf("outputs: %+v", up.Outputs)
	}
	pools, _ := up.Outputs["pools"].Value.(map[string]any)
	infer, _ := pools["infer"].(map[string]any)
	train, _ := pools["train"].(map[string]any)
	if infer["gpusPerNode"] != 8.0 || train["migInstance"] != "3g.40gb" || train["gpuResourcesPerNode"] != 16.0 {
		t.Errorf("pool facts in outputs: %v", pools)
	}
	for k, o := range up.Outputs {
		if o.Secret != (k == "apiKey" || k == "vectorDBCredentials") {
			t.Errorf("output %s: secret %v; only apiKey and vectorDBCredentials are secret", k, o.Secret)
		}
	}
	if up.Outputs["apiKey"].Value != pulumitest.SecretMarker+"-serving.apiKey" {
		t.Errorf("apiKey output is not the configured key")
	}
	if ext := fmt.Sprint(up.Outputs["externalSecrets"].Value); !strings.Contains(ext, "gpu-node-pools-api-key") || !strings.Contains(ext, "gpu-node-pools-storage") {
		t.Errorf("externalSecrets output %s: a render stack must name the Secrets to provide", ext)
	}
	// only secret values are asked for; the others are given, with the type
	entries, _ := up.Outputs["externalSecrets"].Value.([]any)
	found := 0
	for _, e := range entries {
		m, _ := e.(map[string]any)
		keys, values := fmt.Sprint(m["keys"]), fmt.Sprint(m["values"])
		switch m["name"] {
		case "gpu-node-pools-storage":
			found++
			if strings.Contains(keys, "RCLONE_CONFIG_SRC_TYPE") || !strings.Contains(keys, "RCLONE_CONFIG_SRC_SECRET_ACCESS_KEY") || !strings.Contains(values, "RCLONE_CONFIG_SRC_TYPE:s3") {
				t.Errorf("the storage Secret to provide: keys %s, values %s", keys, values)
			}
		case vectordb.CredentialsSecret("rag"):
			found++
			if m["type"] != "kubernetes.io/basic-auth" || keys != "[password]" || !strings.Contains(values, "username:") {
				t.Errorf("pgvector's credentials to provide: %v", m)
			}
		}
	}
	if found < 2 {
		t.Errorf("externalSecrets output %v: want the storage Secret and pgvector's credentials", entries)
	}
	for k, o := range up.Outputs {
		if b, _ := json.Marshal(o.Value); !o.Secret && strings.Contains(string(b), pulumitest.SecretMarker) {
			t.Errorf("a secret marker leaked into the plain stack output %s", k)
		}
	}

	// A second preview changes nothing.
	again, err := s.Preview(ctx, optpreview.ExpectNoChanges())
	if err != nil {
		t.Fatalf("second preview: %v", err)
	}
	for op, n := range again.ChangeSummary {
		if op != "same" && n > 0 {
			t.Errorf("second preview: %d %s", n, op)
		}
	}

	if hits := pulumitest.FilesContaining(t, pulumitest.SecretMarker, backend, filepath.Join(dir, "rendered"), filepath.Join(dir, "Pulumi.dev.yaml")); len(hits) > 0 {
		t.Errorf("secret marker in plain text in %v", hits)
	}

	if _, err := s.Destroy(ctx); err != nil {
		t.Fatalf("destroy: %v", err)
	}
}

// checkRendered reads the manifests the render provider wrote: every pool's
// Cluster API objects, with the GPU taint and the autoscaler annotations.
func checkRendered(t *testing.T, dir string) {
	t.Helper()
	kinds := map[string]int{}
	for _, m := range readManifests(t, filepath.Join(dir, "management")) {
		f, b, obj := m.file, m.raw, m.obj
		kind, _ := obj["kind"].(string)
		kinds[kind]++
		switch kind {
		case "MachineDeployment":
			ann := obj["metadata"].(map[string]any)["annotations"].(map[string]any)
			if ann[minSizeAnnot] != "0" || ann[maxSizeAnnot] == nil || ann[capacityPrefix+"taints"] != gpuTaint {
				t.Errorf("%s: annotations %v", f, ann)
			}
		case "KubeadmConfigTemplate":
			if !strings.Contains(string(b), "key: nvidia.com/gpu") || !strings.Contains(string(b), "effect: NoSchedule") {
				t.Errorf("%s lacks the GPU taint:\n%s", f, b)
			}
		}
	}
	if kinds["MachineDeployment"] != 3 || kinds["KubeadmConfigTemplate"] != 3 || kinds["Metal3MachineTemplate"] != 3 {
		t.Errorf("rendered kinds %v, want 3 of each: one per pool", kinds)
	}
	checkRenderedPlatform(t, filepath.Join(dir, "workload"))
}

// checkRenderedPlatform reads the workload manifests: the namespace, the
// GPU operator rendered from its chart with the GPU tolerations, the alert
// rules and the dashboards.
func checkRenderedPlatform(t *testing.T, dir string) {
	t.Helper()
	kinds := map[string]int{}
	engines := 0
	for _, m := range readManifests(t, dir) {
		f, b, obj := m.file, m.raw, m.obj
		kind, _ := obj["kind"].(string)
		kinds[kind]++
		if kind == "ClusterPolicy" && obj["apiVersion"] == "nvidia.com/v1" && !strings.Contains(string(b), "key: nvidia.com/gpu") {
			t.Errorf("%s: the GPU operator's operands lack the GPU toleration", f)
		}
		if kind == "Deployment" && obj["metadata"].(map[string]any)["name"] == serving.DeploymentName("llama3-8b") {
			engines++
			checkEngineDeployment(t, obj, false)
		}
	}
	if engines != 1 {
		t.Errorf("rendered %d engine Deployments for llama3-8b, want 1", engines)
	}
	for _, k := range []string{"Namespace", "ClusterPolicy", "Deployment", "PrometheusRule", "ConfigMap", "CronJob", "ScaledObject", "InterceptorRoute"} {
		if kinds[k] == 0 {
			t.Errorf("no %s rendered; kinds: %v", k, kinds)
		}
	}
}

type manifest struct {
	file string
	raw  []byte
	obj  map[string]any
}

// readManifests reads every YAML file the render provider wrote under dir
// (0-crd/ and 1-manifest/).
func readManifests(t *testing.T, dir string) []manifest {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no rendered manifests under %s (%v)", dir, err)
	}
	var out []manifest
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(b, &obj); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, manifest{file: f, raw: b, obj: obj})
	}
	return out
}
