package sizing

import (
	"fmt"
	"math"
	"sort"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/models"
	"github.com/natron/gpu-node-pools/internal/pricing"
)

// Requirements are what a customer asks for.
type Requirements struct {
	// Model is a catalog model or the path of a Hugging Face config.json;
	// Quantization vLLM's --quantization ("": the checkpoint's);
	// KVCacheDtype its --kv-cache-dtype ("" or auto, fp8).
	Model        string
	Quantization string
	KVCacheDtype string
	// Context is the longest sequence (maxModelLen; 0: the native
	// context), and each of Concurrency streams may hold it at once.
	Context     int
	Concurrency int
	// TPOT is the slowest acceptable time per output token, seconds.
	TPOT float64
	// Prompt is the prompt length the time to first token is given for
	// (0: a quarter of the context); Output the answer's length (0: 256),
	// which spreads the other streams' prefills over its tokens.
	Prompt, Output int
	// Region prices the AKS sizes; Spot ranks by spot prices.
	Region string
	Spot   bool
}

// Design is one way to meet the requirements: a node shape, the tensor
// parallelism and replicas on it, how fast they answer and what the
// nodes cost.
type Design struct {
	SKU            string `json:"sku"`
	GPU            string `json:"gpu"`
	NodeGPUs       int    `json:"nodeGpus"`
	TensorParallel int    `json:"tensorParallel"`
	Batch          int    `json:"batch"` // streams per replica at peak
	Replicas       int    `json:"replicas"`
	MinNodes       int    `json:"minNodes"`
	MaxNodes       int    `json:"maxNodes"`
	// TPOTMs and TTFTMs are the model's figures; the ranges are the
	// fastest and slowest the held-out oracles of their regimes allow
	// (Bands), and a design is offered only when the slow end of the
	// TPOT range meets the target.
	TPOTMs         float64    `json:"tpotMs"`
	TPOTRangeMs    [2]float64 `json:"tpotRangeMs"`
	TTFTMs         float64    `json:"ttftMs"`
	TTFTRangeMs    [2]float64 `json:"ttftRangeMs"`
	TokensPerSec   float64    `json:"tokensPerSecondPerReplica"`
	TotalTokensSec float64    `json:"tokensPerSecond"`
	// Hourly prices of one node (0: none on record) and the monthly cost
	// of MaxNodes nodes.
	HourlyOnDemand  float64 `json:"hourlyOnDemand,omitempty"`
	HourlySpot      float64 `json:"hourlySpot,omitempty"`
	MonthlyOnDemand float64 `json:"monthlyOnDemand,omitempty"`
	MonthlySpot     float64 `json:"monthlySpot,omitempty"`
	// PriceNote and SpotNote are the figures' dates and sources;
	// MissingPrice says which figure the table lacks, in words.
	PriceNote    string `json:"priceNote,omitempty"`
	SpotNote     string `json:"spotNote,omitempty"`
	MissingPrice string `json:"missingPrice,omitempty"`
	// Uncovered says what of the design no oracle covers, in words
	// (Calibration.Uncovered): its figures and ranges are unjudged there.
	Uncovered []string `json:"uncovered,omitempty"`
}

// Rejected is a node shape that cannot meet the requirements, and why.
type Rejected struct {
	SKU    string `json:"sku"`
	Reason string `json:"reason"`
}

// Result is every feasible design, cheapest first, and every rejected
// shape.
type Result struct {
	Model string `json:"model"`
	// Card is the model as sized: the catalog's, or its config.json's.
	Card     models.Card `json:"-"`
	Context  int         `json:"context"`
	Designs  []Design    `json:"designs"`
	Rejected []Rejected  `json:"rejected"`
}

// NothingFits is the error when no design meets the requirements: the
// requirement that fails and the closest design.
type NothingFits struct{ Msg string }

func (e *NothingFits) Error() string { return e.Msg }

// Recommend lists the designs on section's node shapes that serve req, ranked
// by monthly cost (spot with req.Spot; shapes without a price on record
// after the priced ones, by the GPUs they keep). prices are the node shapes'
// prices; nil prices rank by GPU count only.
func Recommend(req Requirements, section catalog.Section, prices pricing.Table) (*Result, error) {
	entry, err := models.Resolve(req.Model)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	ctx := req.Context
	if ctx == 0 {
		ctx = entry.NativeContext
	}
	switch {
	case ctx < 1 || ctx > entry.NativeContext:
		return nil, fmt.Errorf("context: must be between 1 and %s's native %d tokens, got %d", entry.Name, entry.NativeContext, req.Context)
	case req.Concurrency < 1:
		return nil, fmt.Errorf("concurrency: must be >= 1 stream, got %d", req.Concurrency)
	case req.TPOT <= 0:
		return nil, fmt.Errorf("tpot: must be > 0 ms per output token, got %g", req.TPOT*1000)
	}
	quant := req.Quantization
	if quant == "" {
		quant = entry.Quantization
	}
	if err := checkPrecision("", quant, req.KVCacheDtype); err != nil {
		return nil, err
	}
	prompt := req.Prompt
	if prompt == 0 {
		prompt = max(ctx/4, 1)
	}
	if req.Output == 0 {
		req.Output = 256
	}
	res := &Result{Model: entry.Name, Card: entry, Context: ctx}
	var closest string
	closestTPOT := math.Inf(1)
	for _, sku := range section.SKUs() {
		m := fit.Model{Name: entry.Name, ParametersB: entry.ParametersB, Dtype: fit.DefaultDtype, Quantization: quant, KVCacheDtype: req.KVCacheDtype,
			GPUMemoryUtilization: fit.DefaultUtilization, MaxModelLen: ctx, Shape: entry.Shape}
		pool := gpupool.NewFacts(gpupool.Spec{Name: sku.Name}, sku, nil)
		if why := precisionMisfit(quant, req.KVCacheDtype, sku.GPU); why != "" {
			res.Rejected = append(res.Rejected, Rejected{sku.Name, why})
			continue
		}
		// the largest tensor parallelism's reason: the closest it came
		reason, found := "", false
		for _, tp := range fit.TensorParallels(m, pool) {
			d, why := design(req, entry, m, pool, sku, tp, ctx, prompt)
			if d == nil {
				reason = why
				if t := slowTPOT(NewDeployment(entry, m, sku, tp), 1, prompt, req.Output); fit.Sizing(m, pool, tp).KVTokens() >= ctx && t < closestTPOT {
					closestTPOT, closest = t, fmt.Sprintf("%s at tensorParallel %d: %.1f ms per token at the slow end of its band", sku.Name, tp, t*1000)
				}
				continue
			}
			price(d, sku.Name, req.Region, req.Spot, prices)
			res.Designs = append(res.Designs, *d)
			found = true
		}
		if !found && reason != "" {
			res.Rejected = append(res.Rejected, Rejected{sku.Name, reason})
		}
	}
	if len(res.Designs) == 0 {
		msg := fmt.Sprintf("no design serves %s at context %d with %d streams within %g ms per token", entry.Name, ctx, req.Concurrency, req.TPOT*1000)
		if closest != "" {
			msg += "; the closest is " + closest
		} else {
			msg += "; no node shape holds one sequence of that context: lower context or quantize"
		}
		return res, &NothingFits{msg}
	}
	sort.SliceStable(res.Designs, func(i, j int) bool { return less(res.Designs[i], res.Designs[j], req.Spot) })
	return res, nil
}

// design is the cheapest way to serve req at tensor parallelism tp on
// sku, or why there is none: each replica takes as many streams as its KV
// cache holds at the full context and its time per token allows at the
// slow end of the held-out band.
func design(req Requirements, entry models.Card, m fit.Model, pool gpupool.Facts, sku catalog.SKU, tp, ctx, prompt int) (*Design, string) {
	mem := fit.Sizing(m, pool, tp)
	byMemory := mem.KVTokens() / ctx
	if byMemory < 1 || mem.HeadroomGiB() < fit.CUDAGraphGiB {
		return nil, fmt.Sprintf("tensorParallel %d: one sequence of %d tokens needs %.0f GiB per GPU, %.0f GiB there", tp, ctx, mem.NeedGiB(), mem.BudgetGiB())
	}
	d := NewDeployment(entry, m, sku, tp)
	if t := slowTPOT(d, 1, prompt, req.Output); t > req.TPOT {
		return nil, fmt.Sprintf("tensorParallel %d: %.1f ms per token for a single stream at the slow end of its band, above %g", tp, t*1000, req.TPOT*1000)
	}
	batch := 1
	for b := 2; b <= min(byMemory, req.Concurrency); b++ {
		if slowTPOT(d, b, prompt, req.Output) > req.TPOT {
			break
		}
		batch = b
	}
	replicas := ceilDiv(req.Concurrency, batch)
	perNode := sku.GPUs / tp
	l := d.Under(batch, prompt, req.Output)
	tpot := Bands[DecodeRegime(batch)]
	return &Design{
		SKU: sku.Name, GPU: sku.GPU.Model, NodeGPUs: sku.GPUs, TensorParallel: tp, Batch: batch, Replicas: replicas,
		MinNodes: 1, MaxNodes: ceilDiv(replicas, perNode),
		TPOTMs: round1(l.ITL * 1000), TPOTRangeMs: tpot.Range(l.ITL * 1000),
		TTFTMs: round1(l.TTFT * 1000), TTFTRangeMs: TTFTRangeMs(d, batch, prompt, l.TTFT),
		TokensPerSec: round1(l.TokensPerSecond), TotalTokensSec: round1(l.TokensPerSecond * float64(replicas)),
		Uncovered: Calibrated.Uncovered(entry, sku.GPU),
	}, ""
}

// slowTPOT is the time per output token of batch streams at the slow end
// of the held-out band of their regime: what the planner holds to the
// target.
func slowTPOT(d Deployment, batch, prompt, output int) float64 {
	return d.Under(batch, prompt, output).ITL * Bands[DecodeRegime(batch)].Pessimistic
}

// price adds a design's node prices and monthly costs, and says in words
// which figure the table lacks (the on-demand price, or the spot price
// when spot ranks).
func price(d *Design, sku, region string, spot bool, prices pricing.Table) {
	d.MissingPrice = prices.Missing(sku, region, false)
	if spot && d.MissingPrice == "" {
		d.MissingPrice = prices.Missing(sku, region, true)
	}
	p, ok := prices.Lookup(sku, region)
	if !ok {
		return
	}
	d.HourlyOnDemand, d.HourlySpot = p.OnDemand, p.Spot
	d.MonthlyOnDemand = round1(p.OnDemand * pricing.HoursPerMonth * float64(d.MaxNodes))
	d.MonthlySpot = round1(p.Spot * pricing.HoursPerMonth * float64(d.MaxNodes))
	if p.OnDemand > 0 {
		d.PriceNote = p.Origin(false)
	}
	if p.Spot > 0 {
		d.SpotNote = p.Origin(true)
	}
}

// less ranks priced designs by monthly cost before unpriced ones: by spot
// where spot ranks and the design has a spot price, then by on-demand,
// then by the GPUs of the nodes at peak (a node is paid whole).
func less(a, b Design, spot bool) bool {
	if spot {
		if c, decided := byCost(a.MonthlySpot, b.MonthlySpot); decided {
			return c
		}
	}
	if c, decided := byCost(a.MonthlyOnDemand, b.MonthlyOnDemand); decided {
		return c
	}
	return a.MaxNodes*a.NodeGPUs < b.MaxNodes*b.NodeGPUs
}

// byCost orders two monthly costs, a priced one first (0: none on record),
// and whether that decided the order.
func byCost(a, b float64) (less, decided bool) {
	switch {
	case (a > 0) != (b > 0):
		return a > 0, true
	case a != b:
		return a < b, true
	}
	return false, false
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func round1(x float64) float64 { return math.Round(x*10) / 10 }
