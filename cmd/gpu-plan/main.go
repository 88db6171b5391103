// Command gpu-plan turns a customer's requirements into GPU pool designs,
// ranked by monthly cost: node shape, tensor parallelism, replicas and
// nodes, time per output token and to first token, throughput, price.
//
//	gpu-plan --model llama-3.1-70b --context 8192 --concurrency 32 --tpot-ms 50 \
//	    --target aks --region eastus [--spot] [--quantization fp8] [--format table|yaml|json]
//	gpu-plan eval --model llama-3.1-70b --sku Standard_ND96isr_H100_v5 --tp 4 --concurrency 16 \
//	    --prompt 2048 --output 256 [--quantization fp8] [--kv-cache-dtype fp8] --format json
//	gpu-plan oracles [--all]   # what the throughput model is fitted on and judged by
//	gpu-plan prices --target aks --shared ../shared > stacks/target/aks/prices.json  # the sourced data
//	gpu-plan prices --target aks > prices.json                                   # the live Azure Retail Prices API
//
// --format yaml prints the cheapest design as a Pulumi.<stack>.yaml
// fragment (pools and models) that the program loads as it is; the same
// function is sizing.Recommend for the Automation API.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/internal/pricing"
	"github.com/natron/gpu-node-pools/internal/sizing"
	"github.com/natron/gpu-node-pools/stacks/target"
	"github.com/natron/gpu-node-pools/stacks/target/registry"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, http.DefaultClient); err != nil {
		fmt.Fprintln(os.Stderr, "gpu-plan:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer, client *http.Client) error {
	if len(args) > 0 && args[0] == "prices" {
		return prices(args[1:], out, client)
	}
	if len(args) > 0 && args[0] == "eval" {
		return evaluate(args[1:], out)
	}
	if len(args) > 0 && args[0] == "oracles" {
		return oracles(args[1:], out)
	}
	fs := flag.NewFlagSet("gpu-plan", flag.ContinueOnError)
	var req sizing.Requirements
	fs.StringVar(&req.Model, "model", "", "a catalog model (docs/sizing.md), or the path of a Hugging Face config.json")
	fs.IntVar(&req.Context, "context", 0, "the longest sequence, tokens (default: the model's native context)")
	fs.IntVar(&req.Concurrency, "concurrency", 1, "streams at peak, each up to --context tokens")
	tpot := fs.Float64("tpot-ms", 50, "the slowest acceptable time per output token, ms (50: faster than reading)")
	fs.IntVar(&req.Prompt, "prompt", 0, "prompt length for the time to first token (default: a quarter of the context)")
	target := fs.String("target", registry.Names()[0], "where the GPU nodes come from: "+strings.Join(registry.Names(), " or "))
	fs.StringVar(&req.Region, "region", "eastus", "the region whose prices on record rank the designs")
	fs.BoolVar(&req.Spot, "spot", false, "rank by spot prices (targets with spot capacity)")
	fs.StringVar(&req.Quantization, "quantization", "", "vLLM --quantization (default: the checkpoint's)")
	fs.StringVar(&req.KVCacheDtype, "kv-cache-dtype", "", "vLLM --kv-cache-dtype: auto or fp8 (halves the KV cache; H100 and H200)")
	fs.IntVar(&req.Output, "output", 0, "output tokens per request, over which the other streams' prompts are spread (default 256)")
	format := fs.String("format", "table", "table, yaml or json")
	var profilePrices priceFlags
	fs.Var(&profilePrices, "price", "a node shape's hourly price, shape=USD (repeatable; the stack's pricing block), for a target with no prices on record")
	if err := fs.Parse(args); err != nil {
		return err
	}
	req.TPOT = *tpot / 1000
	t, table, err := targetPrices(*target, req.Region, profilePrices)
	if err != nil {
		return err
	}
	res, err := sizing.Recommend(req, t.Catalog(), table)
	var nf *sizing.NothingFits
	if errors.As(err, &nf) && *format == "table" {
		printRejected(out, res)
	}
	if err != nil {
		return err
	}
	switch *format {
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	case "yaml":
		return printFragment(out, res, t, req, profilePrices)
	case "table":
		printDesigns(out, res)
		printRejected(out, res)
		return nil
	}
	return fmt.Errorf("--format: must be table, yaml or json, got %q", *format)
}

// printFragment prints the best design as stack config to go under the
// config: of a Pulumi.<stack>.yaml (indented as there), with the pricing
// the plan was ranked by and what the stack still needs.
func printFragment(out io.Writer, res *sizing.Result, t target.Target, req sizing.Requirements, profiles priceFlags) error {
	price := pricing.Spec{Prices: profiles}
	if t.Prices() != nil { // a target with a price table: the region ranked the plan
		price.Region = req.Region
	}
	d := res.Designs[0]
	stack, err := fragment(res, d, t.Planning(), req, price)
	if err != nil {
		return err
	}
	b, err := yaml.Marshal(stack)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "# %s on %s: tensorParallel %d, %d replicas of %d streams, %.1f ms per token.\n",
		res.Model, d.SKU, d.TensorParallel, d.Replicas, d.Batch, d.TPOTMs)
	for _, u := range d.Uncovered {
		fmt.Fprintf(out, "# Outside the calibration (docs/sizing.md), so that figure rests on the model alone: %s.\n", u)
	}
	fmt.Fprintln(out, "# Merge into a stack file, keeping its comments, and list what it still needs (the weights")
	fmt.Fprintln(out, "# store's address and keys, the API key) with the commands to set them:")
	fmt.Fprintln(out, "#   gpu-plan ... --format yaml | go run ./cmd/stackctl add-model -stack <stack>")
	fmt.Fprintln(out, "# or paste under config: and set models[0].source to where the weights are.")
	for _, line := range strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n") {
		fmt.Fprint(out, "  "+line)
	}
	fmt.Fprintln(out)
	return nil
}

// targetPrices is the target and its node shapes' prices: its table on
// record, or the --price flags for a target whose stacks set their own.
func targetPrices(name, region string, profiles priceFlags) (target.Target, pricing.Table, error) {
	t, ok := registry.Lookup(name)
	if !ok {
		return nil, nil, fmt.Errorf("--target: must be one of %s, got %q", strings.Join(registry.Names(), ", "), name)
	}
	if table := t.Prices(); table != nil {
		return t, table, nil
	}
	var table pricing.Table
	names := t.Catalog().Names()
	for profile, usd := range profiles {
		if !slices.Contains(names, profile) {
			return nil, nil, fmt.Errorf("--price: %q is not a node shape of target %s; known: %s", profile, name, strings.Join(names, ", "))
		}
		table = append(table, pricing.Price{SKU: profile, Region: region, OnDemand: usd, Retrieved: "--price", Source: "the provider's price"})
	}
	return t, table, nil
}

func printDesigns(out io.Writer, res *sizing.Result) {
	fmt.Fprintf(out, "%s at %d tokens of context: %d designs, cheapest first\n", res.Model, res.Context, len(res.Designs))
	fmt.Fprintln(out, "Each is offered only if the slow end of its TPOT range meets the target: the ranges are the model's")
	fmt.Fprintln(out, "worst errors on held-out published measurements of the same regime (docs/sizing.md).")
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SKU\tTP\tSTREAMS/REPLICA\tREPLICAS\tNODES\tTPOT ms (RANGE)\tTTFT ms (RANGE)\tTOK/S/REPLICA\tTOK/S\tON-DEMAND/MONTH\tSPOT/MONTH")
	var missing, unjudged []string
	for _, d := range res.Designs {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d-%d\t%.1f (%.1f-%.1f)\t%.0f (%.0f-%.0f)\t%.0f\t%.0f\t%s\t%s\n", d.SKU, d.TensorParallel, d.Batch, d.Replicas,
			d.MinNodes, d.MaxNodes, d.TPOTMs, d.TPOTRangeMs[0], d.TPOTRangeMs[1], d.TTFTMs, d.TTFTRangeMs[0], d.TTFTRangeMs[1],
			d.TokensPerSec, d.TotalTokensSec, money(d.MonthlyOnDemand, "no price"), money(d.MonthlySpot, "no spot price"))
		if d.MissingPrice != "" {
			missing = appendNew(missing, d.MissingPrice)
		}
		for _, u := range d.Uncovered {
			unjudged = appendNew(unjudged, u)
		}
	}
	_ = w.Flush()
	fmt.Fprintln(out, "\nPrices: USD, hourly × 730 × the nodes at peak.")
	for _, m := range missing {
		fmt.Fprintf(out, "  %s: ranked after the priced designs (gpu-plan prices refreshes the table; a stack's pricing.prices sets its own).\n", m)
	}
	if len(unjudged) > 0 {
		fmt.Fprintln(out, "\nOutside the calibration (docs/sizing.md); there, figures and ranges rest on the model alone:")
		for _, u := range unjudged {
			fmt.Fprintf(out, "  %s\n", u)
		}
	}
}

func printRejected(out io.Writer, res *sizing.Result) {
	if res == nil || len(res.Rejected) == 0 {
		return
	}
	fmt.Fprintln(out, "\nNot feasible:")
	for _, r := range res.Rejected {
		fmt.Fprintf(out, "  %s: %s\n", r.SKU, r.Reason)
	}
}

func money(v float64, none string) string {
	if v <= 0 {
		return none
	}
	return fmt.Sprintf("$%.0f", v)
}

// priceFlags are --price profile=USD.
type priceFlags map[string]float64

func (p *priceFlags) String() string { return fmt.Sprint(map[string]float64(*p)) }
func (p *priceFlags) Set(v string) error {
	name, usd, ok := strings.Cut(v, "=")
	f, err := strconv.ParseFloat(usd, 64)
	if !ok || err != nil || f <= 0 {
		return fmt.Errorf("want profile=USD per hour, got %q", v)
	}
	if *p == nil {
		*p = priceFlags{}
	}
	(*p)[name] = f
	return nil
}

// prices refreshes the price tables of the targets that keep one from a
// public price list, and prints it as the target's prices.json.
func prices(args []string, out io.Writer, client *http.Client) error {
	fs := flag.NewFlagSet("prices", flag.ContinueOnError)
	name := fs.String("target", registry.Names()[0], "the target whose prices to refresh")
	regions := fs.String("regions", "", "comma-separated regions (default: the target's)")
	api := fs.String("api", "", "the price list's address (default: the target's public one)")
	shared := fs.String("shared", "", "build the table from the sourced price data under this shared-assets directory (no network), instead of the live price list")
	if err := fs.Parse(args); err != nil {
		return err
	}
	t, ok := registry.Lookup(*name)
	refresher, refreshes := t.(target.PriceRefresher)
	if !ok || !refreshes {
		return fmt.Errorf("--target: %q keeps no public price list; its stacks set pricing.prices", *name)
	}
	table, err := readPrices(refresher, client, *api, *regions, *shared)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // dates "<=2024-08-27" as written
	return enc.Encode(table)
}

// readPrices is the table from the sourced data under shared, or from the
// live price list.
func readPrices(t target.PriceRefresher, client *http.Client, api, regions, shared string) (pricing.Table, error) {
	if shared != "" {
		f, err := os.Open(filepath.Join(shared, t.PricesData()))
		if err != nil {
			return nil, fmt.Errorf("--shared: %w", err)
		}
		defer f.Close()
		return t.PricesFromData(f)
	}
	var list []string
	if regions != "" {
		list = strings.Split(regions, ",")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return t.RefreshPrices(ctx, client, api, list, time.Now().UTC().Format("2006-01-02"))
}
