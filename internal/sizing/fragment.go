package sizing

import (
	"strings"

	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/models"
)

// PoolName is the name the fragment gives the design's pool.
const PoolName = "serve"

// Fragment is a design as stack config, keyed like a Pulumi.<stack>.yaml
// (without the project prefix): the pool of its node shape, and the
// model on it with the values the design decided. source points at the
// model's Hugging Face path in the weights store, to adjust.
func Fragment(res *Result, d Design, target catalog.Target, req Requirements) map[string]any {
	pool := map[string]any{"name": PoolName, "sku": d.SKU, "minNodes": 0, "maxNodes": d.MaxNodes}
	if req.Spot && target == catalog.AKS {
		pool["spot"] = true
	}
	entry, _ := models.Known.Lookup(res.Model)
	scheme := "s3"
	if target == catalog.AKS {
		scheme = "az"
	}
	model := map[string]any{
		"name": ModelName(res.Model), "pool": PoolName, "source": scheme + "://models/" + entry.HuggingFace,
		"model": res.Model, "tensorParallel": d.TensorParallel, "maxModelLen": res.Context,
		"concurrency": d.Batch, "minReplicas": 1, "maxReplicas": d.Replicas,
	}
	if req.Quantization != "" && req.Quantization != entry.Quantization {
		model["quantization"] = req.Quantization
	}
	return map[string]any{"pools": []any{pool}, "models": []any{model}}
}

// ModelName is a catalog name as a model's config name: a DNS label of at
// most serving.MaxModelName characters.
func ModelName(catalogName string) string {
	n := strings.ReplaceAll(strings.ToLower(catalogName), ".", "-")
	if len(n) > serving.MaxModelName {
		n = n[:serving.MaxModelName]
	}
	return strings.TrimRight(n, "-")
}
