// Package config is the stack config contract: the typed config, the one
// table of its blocks (blocks.go) that drives the declared keys, strict
// decoding and the Automation API's config map, and each block's own
// validation. What depends on several blocks, and every default, is
// decided when the plan is made (stacks/plan).
package config

import (
	"github.com/natron/gpu-node-pools/components/backup"
	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/components/logging"
	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/components/policy"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/components/vectordb"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/images"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/pricing"
	"github.com/natron/gpu-node-pools/stacks/fleet"
	"github.com/natron/gpu-node-pools/stacks/target"
)

// Namespace is the config namespace, the Pulumi project name.
const Namespace = kube.Project

// Config is the stack config as written (gpu-node-pools:*), typed. The
// Automation API builds one by hand or from a stack file.
type Config struct {
	// Target is where the GPU nodes come from. Required: one of the
	// registered targets, each with its own block.
	Target string
	// Cluster is the target's block (gpu-node-pools:<target>), documented
	// by the target's Cluster type.
	Cluster target.Cluster
	// RenderDir writes every Kubernetes object as YAML under this
	// directory (workload/, management/) instead of applying it; Secrets
	// holding secret values are left out and named in the externalSecrets
	// output.
	RenderDir string
	// Protect is true, false or auto: auto protects the node pools when
	// the stack name starts with "prod".
	// Default: auto.
	Protect *bool
	// Pools are the GPU pools. Required, at least one.
	Pools []gpupool.Spec
	// Platform is the GPU platform layer on top of the pools: the device
	// plugin or GPU operator, the DCGM exporter, dashboards and alerts
	// (docs/platform.md).
	Platform platform.Spec
	// Storage is where model weights live; required with models
	// (docs/serving.md).
	Storage *serving.Storage
	// Serving are the model serving settings (docs/serving.md).
	Serving serving.Options
	// Models are served with vLLM, or with Ollama, on the pools; with
	// model, only name, pool and source are needed. The values each model
	// runs with, defaults included, are in the stack output
	// models.<name>.sizing.
	Models []serving.ModelSpec
	// BatchJobs run off-peak on the pools as CronJobs.
	BatchJobs []serving.BatchJobSpec
	// VectorDBs are the RAG pipelines' vector databases, on CPU nodes
	// (docs/serving.md).
	VectorDBs []vectordb.Spec
	// Policies are the Kyverno policies for GPU pods; Kyverno itself
	// belongs to the cluster (docs/policies.md).
	Policies policy.Spec
	// PodSecurity lowers the Pod Security level (restricted) that a
	// namespace the program creates enforces, by role: serving, batch or
	// keda, each {level: baseline or privileged, reason: why, at least 15
	// characters} (docs/security.md).
	PodSecurity podsecurity.Spec
	// Pricing prices the pools: each pool's monthly cost is in the stack
	// output pools.<name>.cost (or why there is none, costNote), the
	// totals in cost (docs/sizing.md).
	Pricing pricing.Spec
	// Logging gets the GPU nodes' logs to the customer's Loki
	// (docs/operations.md).
	Logging logging.Spec
	// Backup backs up what the program runs with Velero
	// (docs/operations.md).
	Backup backup.Spec
	// GitOps syncs the rendered files with the platform's Argo CD or Flux;
	// only with renderDir, and left empty the program sets up no sync
	// (docs/rendering.md).
	GitOps gitops.Spec
	// Images pins the images the program sets to digests of the stack's
	// choosing (docs/security.md, "Images").
	Images images.Spec
	// Fleet is the stack's place in the provider's fleet: the rollout wave
	// it goes out in (docs/automation.md, "Fleets on GitHub Actions"). The
	// program itself does not read it; stackctl fleet does.
	Fleet fleet.Spec
}

// Key is the full path of a top-level key, gpu-node-pools:<k>.
func Key(k string) string { return Namespace + ":" + k }
