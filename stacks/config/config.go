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
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/pricing"
	"github.com/natron/gpu-node-pools/stacks/target"
)

// Namespace is the config namespace, the Pulumi project name.
const Namespace = kube.Project

// Config is the stack config as written (gpu-node-pools:*), typed. The
// Automation API builds one by hand or from a stack file.
type Config struct {
	// Target is where the GPU nodes come from: aks or natron.
	Target string
	// Cluster is the target's block (gpu-node-pools:aks or
	// gpu-node-pools:natron): *aks.Cluster or *baremetal.Cluster.
	Cluster   target.Cluster
	RenderDir string
	// Protect is nil for "auto": on when the stack name starts with "prod".
	Protect *bool
	Pools   []gpupool.Spec
	// Platform is the GPU platform layer on top of the pools.
	Platform platform.Spec
	// Storage is where model weights live.
	Storage *serving.Storage
	// Serving are the model serving settings.
	Serving serving.Options
	// Models are served with vLLM on the pools.
	Models []serving.ModelSpec
	// BatchJobs run off-peak on the pools.
	BatchJobs []serving.BatchJobSpec
	// Policies are the Kyverno policies for GPU pods.
	Policies policy.Spec
	// PodSecurity lowers the Pod Security level of a namespace the
	// program creates, with a reason.
	PodSecurity podsecurity.Spec
	// Pricing prices the pools: the AKS region, the provider's prices.
	Pricing pricing.Spec
	// Logging gets the GPU nodes' logs to the customer's Loki.
	Logging logging.Spec
	// Backup backs up what the program runs with Velero.
	Backup backup.Spec
	// GitOps syncs the rendered files with the platform's Argo CD or
	// Flux (left empty: not set up by the program).
	GitOps gitops.Spec
	// VectorDBs are the RAG pipelines' vector databases, on CPU nodes.
	VectorDBs []vectordb.Spec
}

// Key is the full path of a top-level key, gpu-node-pools:<k>.
func Key(k string) string { return Namespace + ":" + k }
