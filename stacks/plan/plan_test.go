package plan_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/natron/gpu-node-pools/components/logging"
	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/components/policy"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// What the plan decides for each target, as the components then read it:
// the target's defaults (GPU stack, storage class, the runtime class that
// follows from the GPU stack), each model's engine on its pool's facts,
// each batch job's pool and deadline, the policies' scope, the stack's own
// images. The real stack files, one per target.
func TestPlanDecidesOnce(t *testing.T) {
	t.Setenv(plan.ChartDirEnv, "") // the charts' source is part of the plan
	for _, tc := range []struct {
		stack                      string
		gpuStack                   platform.GPUStack
		storageClass, runtimeClass string
		pools                      int
		images                     []string
		cpuOnly                    []string
	}{
		{"dev", platform.GPUOperator, "cephfs", "nvidia", 3, []string{
			"nvcr.io/nvidia", "registry.k8s.io/nfd/node-feature-discovery", "docker.io/grafana/alloy", "quay.io/prometheus-operator/prometheus-config-reloader",
			"vllm/vllm-openai:v0.14.1@sha256:6bf34e50e2387dc46dc87a9d6a945fdd616a022bccfddd949052f54063ebcb8c", "rclone/rclone:1.75.1@sha256:45401ad7410db1d67ffdb58e19059ad20b0d8e0285a60e38bbec55cc1019c7a5", "busybox:1.37.0", "caddy:2.11.9-alpine", "ollama/ollama:0.32.15@sha256:57d60e686821ea81a7748a3ec8141308c8b8f95b27105713954abf7a6529e700",
			"registry.natron-cloud.example/ml/finetune:0.3"}, []string{"vector-dbs"}},
		{"prod", platform.DevicePlugin, "azurefile-csi-premium", "", 4, []string{
			"nvcr.io/nvidia/k8s-device-plugin", "nvcr.io/nvidia/k8s/dcgm-exporter", "vllm/vllm-openai:v0.14.1@sha256:6bf34e50e2387dc46dc87a9d6a945fdd616a022bccfddd949052f54063ebcb8c", "rclone/rclone:1.75.1@sha256:45401ad7410db1d67ffdb58e19059ad20b0d8e0285a60e38bbec55cc1019c7a5", "busybox:1.37.0", "caddy:2.11.9-alpine",
			"registry.acme.example/embedder:1.4"}, nil},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			raw, _, err := pulumitest.StackConfig(tc.stack)
			if err != nil {
				t.Fatal(err)
			}
			p, err := plan.Load(pulumitest.Unqualified(raw), tc.stack)
			if err != nil {
				t.Fatal(err)
			}
			if p.Platform.GPUStack != tc.gpuStack || p.Serving.Options.StorageClass != tc.storageClass {
				t.Errorf("defaults: GPU stack %s, storage class %s; want %s, %s", p.Platform.GPUStack, p.Serving.Options.StorageClass, tc.gpuStack, tc.storageClass)
			}
			if len(p.Pools) != tc.pools || len(p.Facts()) != tc.pools {
				t.Fatalf("%d pools resolved, want %d", len(p.Pools), tc.pools)
			}
			for _, pool := range p.Pools {
				if pool.SKU.Name != pool.Spec.SKU || pool.Facts.Name != pool.Spec.Name || pool.Facts.GPUsPerNode != pool.SKU.GPUs {
					t.Errorf("pool %s: SKU %s, facts %+v", pool.Spec.Name, pool.SKU.Name, pool.Facts)
				}
			}
			facts := map[string]string{}
			for _, f := range p.Facts() {
				facts[f.Name] = f.SKU
			}
			cfg := stacktest.Config(t, tc.stack)
			var vllm, ollama []serving.ModelSpec
			for _, m := range cfg.Models {
				if m.IsOllama() {
					ollama = append(ollama, m)
				} else {
					vllm = append(vllm, m)
				}
			}
			if len(p.Serving.Engines) != len(vllm) || len(p.Serving.Ollamas) != len(ollama) || len(p.Serving.Jobs) != len(cfg.BatchJobs) {
				t.Fatalf("%d engines, %d Ollama servers and %d jobs for %d vLLM models, %d Ollama models and %d batch jobs",
					len(p.Serving.Engines), len(p.Serving.Ollamas), len(p.Serving.Jobs), len(vllm), len(ollama), len(cfg.BatchJobs))
			}
			for i, s := range p.Serving.Ollamas {
				m := ollama[i]
				if s.Name != m.Name || s.Ref.Short() != m.Source || (m.Pool == "") != (s.Pool == nil) || s.Image != p.Serving.Options.OllamaImage {
					t.Errorf("Ollama server %s: %+v", m.Name, s)
				}
			}
			for i, e := range p.Serving.Engines {
				m := vllm[i]
				if e.Name != m.Name || e.Pool.Name != m.Pool || e.Pool.SKU != facts[m.Pool] ||
					(m.TensorParallel != 0 && e.TensorParallel != m.TensorParallel) || len(fit.Fit(nil, e.Model, e.Pool)) > 0 ||
					e.RuntimeClass != tc.runtimeClass || e.Image != p.Serving.Options.Image ||
					!cmp.Equal(e.ServiceMonitorLabels, p.Platform.Monitoring.ServiceMonitorLabels) {
					t.Errorf("engine %s: %+v", m.Name, e)
				}
			}
			for i, j := range p.Serving.Jobs {
				if j.Name != cfg.BatchJobs[i].Name || j.Pool.Name != cfg.BatchJobs[i].Pool || j.DeadlineMinutes != 240 || j.RuntimeClass != tc.runtimeClass {
					t.Errorf("batch job %s: %+v", cfg.BatchJobs[i].Name, j)
				}
			}
			want := policy.Scope{PlatformNamespace: "gpu-platform", ServingNamespace: "models", BatchNamespace: "batch", CPUOnlyNamespaces: tc.cpuOnly}
			if p.Policies == nil || !cmp.Equal(p.Policies.Scope, want) {
				t.Errorf("policies %+v, want scope %+v", p.Policies, want)
			}
			var images []string
			for _, img := range p.Images {
				images = append(images, img.Ref)
			}
			if diff := cmp.Diff(tc.images, images); diff != "" {
				t.Errorf("the stack's own images (-want +got):\n%s", diff)
			}
		})
	}
}

// The backup Schedule covers the namespaces the program owns, whatever
// they are called, and skips the weight caches' storage class; the
// log collector's namespace only when the program installs it, the
// vector databases' with them, the serving side's only with models or
// jobs (an Ollama model alone too: its store, like vLLM's weight cache, is
// a re-pullable copy, so its class is skipped).
func TestBackupScope(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		edit       func(c *config.Config)
		namespaces []string
		skip       []string
	}{
		{"dev", func(*config.Config) {}, []string{"batch", "gpu-platform", "logging", "models", "vector-dbs"}, []string{"cephfs"}},
		{"renamed namespaces, no log collector", func(c *config.Config) {
			c.Serving.Namespace, c.Serving.BatchNamespace, c.Platform.Namespace = "inference", "training", "gpu-system"
			c.Logging = logging.Spec{}
			c.VectorDBs[0].Namespace = "rag"
		}, []string{"gpu-system", "inference", "rag", "training"}, []string{"cephfs"}},
		{"no models, a job", func(c *config.Config) { c.Models, c.VectorDBs = nil, nil; c.Storage = nil }, []string{"batch", "gpu-platform", "logging", "models"}, nil},
		{"only an Ollama model", func(c *config.Config) { c.Models, c.BatchJobs, c.Storage, c.VectorDBs = c.Models[1:], nil, nil, nil },
			[]string{"batch", "gpu-platform", "logging", "models"}, []string{"cephfs"}},
		{"pools only", func(c *config.Config) { c.Models, c.BatchJobs, c.Storage, c.VectorDBs = nil, nil, nil, nil }, []string{"gpu-platform", "logging"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := stacktest.Config(t, "dev")
			tc.edit(c)
			p, err := plan.Resolve(c, "dev")
			if err != nil {
				t.Fatal(err)
			}
			if p.Backup == nil {
				t.Fatal("no backup part")
			}
			if d := cmp.Diff(tc.namespaces, p.Backup.Covered); d != "" {
				t.Errorf("namespaces (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.skip, p.Backup.Skipped); d != "" {
				t.Errorf("skipped classes (-want +got):\n%s", d)
			}
		})
	}
}

// What a vector database needs of the rest of the stack is checked when
// the plan is made, naming the key: a nodeSelector that picks a GPU
// pool's nodes, a backup without storage, a backup path of the wrong kind
// of store.
func TestVectorDBsAgainstTheStack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(c *config.Config)
		want string
	}{
		{"on a GPU pool", func(c *config.Config) {
			p, err := plan.Resolve(stacktest.Config(t, "dev"), "dev")
			if err != nil {
				t.Fatal(err)
			}
			c.VectorDBs[0].NodeSelector = p.Facts()[0].NodeSelector
		}, "gpu-node-pools:vectorDBs[0].nodeSelector: selects the nodes of GPU pool infer"},
		{"backup without storage", func(c *config.Config) { c.Models, c.Storage = nil, nil },
			"gpu-node-pools:storage: required by vectorDBs[0].backup"},
		{"backup to Blob on S3 storage", func(c *config.Config) { c.VectorDBs[0].Backup = "https://acme.blob.core.windows.net/pg/rag" },
			"gpu-node-pools:vectorDBs[0].backup: must be an s3://bucket/path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := stacktest.Config(t, "dev")
			tc.edit(c)
			_, err := plan.Resolve(c, "dev")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// An Ollama model is checked against the pool it names when the plan is
// made, naming the key: a tag too big for one GPU resource of the pool, and
// a runtime the program does not know (reported alone: the vLLM rules,
// such as a required pool, do not follow it).
func TestOllamaAgainstTheStack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(m *serving.ModelSpec)
		want string
	}{
		{"405b on one H100", func(m *serving.ModelSpec) { m.Pool, m.Source = "infer", "llama3.1:405b" },
			`gpu-node-pools:models[1].pool: does not hold llama-dev (llama3.1:405b): it needs 234.1 GiB`},
		{"8b on one H100", func(m *serving.ModelSpec) { m.Pool, m.Source = "infer", "llama3.1:8b" }, ""},
		{"unknown runtime", func(m *serving.ModelSpec) { m.Runtime = "tgi" },
			`gpu-node-pools:models[1].runtime: must be one of vllm, ollama, got "tgi"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := stacktest.Config(t, "dev")
			if c.Models[1].Name != "llama-dev" {
				t.Fatalf("dev models[1] is %q, want llama-dev", c.Models[1].Name)
			}
			tc.edit(&c.Models[1])
			_, err := plan.Resolve(c, "dev")
			switch {
			case tc.name == "unknown runtime" && err != nil && strings.Contains(err.Error(), "models[1].pool"):
				t.Errorf("error %v, want the runtime reported alone", err)
			case tc.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// On a target whose pools live in a management cluster, the GitOps tool
// syncs two trees to two clusters: the workload tree and the Cluster API
// objects. Left to their defaults, both destinations are the cluster the
// tool runs in (Argo CD's in-cluster server, Flux's own cluster), and the
// GPU stack and the MachineDeployments land together; the plan refuses
// that, naming the key, and accepts two distinct clusters.
func TestGitOpsTreesGoToTwoClusters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                 string
		tool, workload, mgmt string
		want                 string
	}{
		{"argocd defaults", "argocd", "", "", "gpu-node-pools:gitops.managementCluster: must differ from workloadCluster (https://kubernetes.default.svc)"},
		{"flux defaults", "flux", "", "", "gpu-node-pools:gitops.managementCluster: must differ from workloadCluster (the cluster flux runs in)"},
		{"argocd, the same cluster twice", "argocd", "acme", "acme", "gpu-node-pools:gitops.managementCluster: must differ from workloadCluster (acme)"},
		{"argocd runs in the management cluster", "argocd", "acme", "", ""},
		{"flux runs in the workload cluster", "flux", "", "natron-management-kubeconfig", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := stacktest.Config(t, "dev")
			c.GitOps.Tool, c.GitOps.WorkloadCluster, c.GitOps.ManagementCluster = tc.tool, tc.workload, tc.mgmt
			_, err := plan.Resolve(c, "dev")
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}
