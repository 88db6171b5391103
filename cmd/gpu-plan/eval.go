package main

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/models"
	"github.com/natron/gpu-node-pools/internal/sizing"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// evaluate is gpu-plan eval: one fixed design's predicted speed and fit,
// for tooling and checks.
//
//	gpu-plan eval --model M --sku S (or --profile P) --tp N --concurrency C --prompt IN --output OUT \
//	    [--quantization Q] [--kv-cache-dtype fp8] [--format json|table]
func evaluate(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("gpu-plan eval", flag.ContinueOnError)
	model := fs.String("model", "", "a catalog model, or the path of a Hugging Face config.json (or of its directory)")
	sku := fs.String("sku", "", "an AKS VM size (or any target's node shape)")
	profile := fs.String("profile", "", "a bare-metal hardware profile (or any target's node shape)")
	var s sizing.Setup
	fs.IntVar(&s.TensorParallel, "tp", 1, "tensor parallelism: GPUs per replica")
	fs.IntVar(&s.Concurrency, "concurrency", 1, "streams in flight on the replica")
	fs.IntVar(&s.Prompt, "prompt", 1024, "prompt tokens per request")
	fs.IntVar(&s.Output, "output", 256, "output tokens per request")
	fs.StringVar(&s.Quantization, "quantization", "", "vLLM --quantization (default: the checkpoint's)")
	fs.StringVar(&s.KVCacheDtype, "kv-cache-dtype", "auto", "vLLM --kv-cache-dtype: auto or fp8")
	format := fs.String("format", "table", "table or json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *format != "table" && *format != "json" {
		return fmt.Errorf("--format: must be table or json, got %q", *format)
	}
	card, err := models.Resolve(*model)
	if err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	shape, err := nodeShape(*sku, *profile)
	if err != nil {
		return err
	}
	e, err := sizing.Evaluate(card, shape, s)
	if err != nil {
		return err
	}
	if *format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(e)
	}
	printEvaluation(out, e)
	return nil
}

// nodeShape finds --sku or --profile in the targets' catalogs.
func nodeShape(sku, profile string) (catalog.SKU, error) {
	name, flagName := sku, "--sku"
	switch {
	case sku != "" && profile != "":
		return catalog.SKU{}, fmt.Errorf("--sku and --profile: give one node shape, got both")
	case profile != "":
		name, flagName = profile, "--profile"
	case sku == "":
		return catalog.SKU{}, fmt.Errorf("--sku or --profile: required: the node shape to evaluate")
	}
	s, err := plan.NodeShape(field.NewPath(flagName), name)
	if err != nil {
		return catalog.SKU{}, err
	}
	return s, nil
}

func printEvaluation(out io.Writer, e *sizing.Evaluation) {
	fmt.Fprintf(out, "%s on %s (%s), tensorParallel %d, concurrency %d, %d tokens in and %d out per request, KV cache %s\n\n",
		e.Model, e.SKU, e.GPU, e.TensorParallel, e.Concurrency, e.Prompt, e.Output, e.KVCacheDtype)
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	r := e.Ranges
	fmt.Fprintf(w, "time per output token\t%.1f ms\t(%.1f-%.1f held out)\n", e.TPOTMs, r["tpotMs"][0], r["tpotMs"][1])
	fmt.Fprintf(w, "time to first token\t%.0f ms\t(%.0f-%.0f held out)\n", e.TTFTMs, r["ttftMs"][0], r["ttftMs"][1])
	fmt.Fprintf(w, "request latency\t%.0f ms\t\n", e.E2EMs)
	fmt.Fprintf(w, "output tokens/s\t%.0f per replica, %.0f per GPU\t\n", e.TokensPerSecondPerReplica, e.TokensPerSecondPerGPU)
	fmt.Fprintf(w, "fits\t%v, KV cache for %d tokens\t%s\n", e.Fits, e.KVCacheTokens, e.FitProblem)
	_ = w.Flush()
	if !e.Calibrated {
		fmt.Fprintln(out, "\nOutside the calibration (docs/sizing.md):")
		for _, u := range e.Uncovered {
			fmt.Fprintf(out, "  %s\n", u)
		}
	}
}
