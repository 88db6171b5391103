package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/models"
	"github.com/natron/gpu-node-pools/internal/pricing"
	"github.com/natron/gpu-node-pools/internal/sizing"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/target"
)

// poolName is the name the fragment gives the design's pool.
const poolName = "serve"

// fragment is a design as stack config keyed like a Pulumi.<stack>.yaml:
// the pool of its node shape and the model on it, the kind of weights
// store the target reads and the pricing the plan was ranked with, built
// as the typed specs the program loads, so each key is spelt once (by its
// struct tag). source points at the model's Hugging Face path in the
// weights store, to adjust. The model stays up (minReplicas 1), so its
// pool keeps the nodes of one replica.
func fragment(res *sizing.Result, d sizing.Design, facts target.Planning, req sizing.Requirements, price pricing.Spec) (map[string]any, error) {
	entry := res.Card
	one := 1
	model := serving.ModelSpec{
		Name: modelName(res.Model), Pool: poolName, Source: serving.Scheme(facts.WeightsStore) + "models/" + cmp.Or(entry.HuggingFace, res.Model),
		CatalogModel: res.Model, TensorParallel: d.TensorParallel, MaxModelLen: res.Context,
		Concurrency: d.Batch, MinReplicas: &one, MaxReplicas: d.Replicas,
	}
	if _, known := models.Known.Lookup(res.Model); !known { // sized from its config.json: the stack gets its size and shape
		shape := entry.Shape
		model.CatalogModel, model.ParametersB, model.Shape = "", math.Round(entry.ParametersB*100)/100, &shape
	}
	if req.Quantization != entry.Quantization {
		model.Quantization = req.Quantization
	}
	if req.KVCacheDtype == "fp8" {
		model.KVCacheDtype = req.KVCacheDtype
	}
	pool := gpupool.Spec{Name: poolName, SKU: d.SKU, MinNodes: d.MinNodes, MaxNodes: d.MaxNodes, Spot: req.Spot && facts.Spot}
	blocks := map[string]any{"pools": []gpupool.Spec{pool}, "models": []serving.ModelSpec{model}, "storage": serving.Storage{Kind: facts.WeightsStore}}
	if price.Region != "" || len(price.Prices) > 0 {
		blocks["pricing"] = price
	}
	out := map[string]any{}
	for key, v := range blocks {
		var generic any
		b, err := json.Marshal(v)
		if err == nil {
			err = json.Unmarshal(b, &generic)
		}
		if err != nil {
			return nil, fmt.Errorf("fragment %s: %w", key, err)
		}
		out[config.Key(key)] = generic
	}
	return out, nil
}

// modelName is a catalog name as a model's config name: a DNS label of at
// most serving.MaxModelName characters.
func modelName(catalogName string) string {
	n := strings.ReplaceAll(strings.ToLower(catalogName), ".", "-")
	if len(n) > serving.MaxModelName {
		n = n[:serving.MaxModelName]
	}
	return strings.TrimRight(n, "-")
}
