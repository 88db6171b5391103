package sizing

import (
	"cmp"
	_ "embed"
	"encoding/csv"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/models"
)

// oraclesTSV are published measurements of served models, each with its
// source and date: the "fit" rows calibrate the model, the "held-out"
// rows judge it and give each regime its error band.
//
//go:embed oracles.tsv
var oraclesTSV []byte

// Oracle is one published measurement.
type Oracle struct {
	ID, Set, Engine, Model   string
	Quantization, KVCache    string
	GPU                      string
	NodeGPUs, TensorParallel int
	// Concurrency is the streams in flight (a serving benchmark's
	// --max-concurrency) or the batch (a latency benchmark's).
	Concurrency, Input, Output int
	// Metric is what was measured: e2e_ms (a latency benchmark's batch,
	// end to end), itl_ms, ttft_ms, tok_s (a replica's output tokens per
	// second) or stream_tok_s (one stream's).
	Metric       string
	Measured     float64
	Source, Date string
}

// The oracles' GPUs, by the names their sources give, with the link
// between them on the boards measured (HGX: NVLink through NVSwitch).
var oracleGPUs = map[string]struct {
	gpu  catalog.GPU
	link catalog.Link
}{
	"A100-SXM4-80GB": {catalog.A100SXM80, catalog.NVLink3},
	"A100-SXM4-40GB": {catalog.A100SXM40, catalog.NVLink3},
	"H100-SXM":       {catalog.H100SXM, catalog.NVLink4},
	"H200-SXM":       {catalog.H200SXM, catalog.NVLink4},
	"A10":            {catalog.A10, catalog.PCIe4},
	"Tesla-T4":       {catalog.T4, catalog.PCIe3},
}

// Oracles are the measurements, parsed once.
var Oracles = mustOracles(oraclesTSV)

func mustOracles(b []byte) []Oracle {
	out, err := parseOracles(string(b))
	if err != nil {
		panic("sizing: oracles.tsv: " + err.Error()) // a bad table is the program's bug; TestOracleTable names it
	}
	return out
}

func parseOracles(s string) ([]Oracle, error) {
	r := csv.NewReader(strings.NewReader(s))
	r.Comma, r.FieldsPerRecord, r.LazyQuotes = '\t', 16, true
	rows, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	var out []Oracle
	for i, row := range rows[1:] {
		n := make([]int, 5)
		for j, col := range []int{7, 8, 9, 10, 11} {
			if n[j], err = strconv.Atoi(row[col]); err != nil {
				return nil, fmt.Errorf("line %d: %w", i+2, err)
			}
		}
		v, err := strconv.ParseFloat(row[13], 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+2, err)
		}
		out = append(out, Oracle{ID: row[0], Set: row[1], Engine: row[2], Model: row[3], Quantization: row[4], KVCache: row[5], GPU: row[6],
			NodeGPUs: n[0], TensorParallel: n[1], Concurrency: n[2], Input: n[3], Output: n[4], Metric: row[12], Measured: v, Source: row[14], Date: row[15]})
	}
	return out, nil
}

// Regime is which part of the model a measurement judges.
type Regime string

// The regimes: decode at a small batch (weights dominate), at a large
// one (KV reads, step costs and chunked prefill), prefill alone and
// under load (one stream, or a prompt arriving among others), and a
// replica's throughput.
const (
	DecodeSmall   Regime = "decode, batch ≤ 8"
	DecodeLarge   Regime = "decode, batch > 8"
	Prefill       Regime = "time to first token, one stream"
	PrefillLoaded Regime = "time to first token under load"
	Throughput    Regime = "throughput"
)

// Regimes lists them in order.
var Regimes = []Regime{DecodeSmall, DecodeLarge, Prefill, PrefillLoaded, Throughput}

// PrefillRegime is the regime of a first token among streams streams.
func PrefillRegime(streams int) Regime {
	if streams > 1 {
		return PrefillLoaded
	}
	return Prefill
}

// DecodeRegime is the regime of decoding batch streams together.
func DecodeRegime(batch int) Regime {
	if batch > 8 {
		return DecodeLarge
	}
	return DecodeSmall
}

// Regime is the oracle's regime.
func (o Oracle) Regime() Regime {
	switch o.Metric {
	case "ttft_ms":
		return PrefillRegime(o.Concurrency)
	case "tok_s":
		return Throughput
	}
	return DecodeRegime(o.Concurrency)
}

// Predict is what calibration c predicts for the oracle's setup, in the
// oracle's unit.
func (c Calibration) Predict(o Oracle) (float64, error) {
	d, err := c.deployment(o)
	if err != nil {
		return 0, err
	}
	return predict(d, o)
}

// predict is Predict on the oracle's deployment d.
func predict(d Deployment, o Oracle) (float64, error) {
	l := d.Under(o.Concurrency, o.Input, o.Output)
	switch o.Metric {
	case "e2e_ms":
		return 1000 * d.Batch(o.Concurrency, o.Input, o.Output), nil
	case "itl_ms":
		return 1000 * l.ITL, nil
	case "ttft_ms":
		return 1000 * l.TTFT, nil
	case "tok_s":
		return l.TokensPerSecond, nil
	case "stream_tok_s":
		return 1 / l.ITL, nil
	}
	return 0, fmt.Errorf("%s: unknown metric %q", o.ID, o.Metric)
}

// deployment is the oracle's setup under calibration c.
func (c Calibration) deployment(o Oracle) (Deployment, error) {
	entry, ok := models.Known.Lookup(o.Model)
	hw, known := oracleGPUs[o.GPU]
	if !ok || !known {
		return Deployment{}, fmt.Errorf("%s: model %q or GPU %q unknown", o.ID, o.Model, o.GPU)
	}
	if _, ok := c.Engines[o.Engine]; !ok {
		return Deployment{}, fmt.Errorf("%s: engine %q unknown", o.ID, o.Engine)
	}
	sku := catalog.SKU{Name: o.GPU, GPU: hw.gpu, GPUs: o.NodeGPUs, Link: hw.link}
	m := fit.Model{ParametersB: entry.ParametersB, Dtype: fit.DefaultDtype, Quantization: cmp.Or(o.Quantization, entry.Quantization), KVCacheDtype: o.KVCache}
	return c.On(o.Engine, entry, m, sku, o.TensorParallel), nil
}

// slower reports whether a larger figure of the metric is the slower
// outcome (a time) rather than the faster (a rate).
func slower(metric string) bool { return strings.HasSuffix(metric, "_ms") }

// Band is how far the model's figures were from the held-out measurements
// of a regime: Optimistic and Pessimistic are the factors to multiply a
// predicted time by to reach the fastest and slowest outcomes seen, and
// Median the middle one (1: no lean).
type Band struct {
	Regime                          Regime
	N                               int
	Optimistic, Median, Pessimistic float64
	// Ceiling, for the first token under load, is the most a held-out
	// row measured over a burst (Deployment.Burst): the slow end of a
	// range is never past Ceiling times the design's burst. 0: none.
	Ceiling float64
}

// Range is the fastest and slowest a predicted time may be, at the
// band's two ends, rounded to a tenth; it always holds the prediction
// itself (a regime whose few held-out rows all came out faster would
// otherwise put the figure outside its own range).
func (b Band) Range(predicted float64) [2]float64 {
	return [2]float64{round1(predicted * min(b.Optimistic, 1)), round1(predicted * max(b.Pessimistic, 1))}
}

// Under is Range for a first token under load whose burst (the mean
// first token if every stream's prompt arrived at once: Deployment.Burst)
// is burst, in the same unit: the slow end is the lesser of the band's
// and Ceiling bursts, and never below the prediction.
func (b Band) Under(predicted, burst float64) [2]float64 {
	r := b.Range(predicted)
	if b.Ceiling > 0 && burst > 0 {
		r[1] = max(min(r[1], round1(burst*b.Ceiling)), round1(predicted))
	}
	return r
}

// TTFTRangeMs is the range of the time to first token ttft (seconds) of
// a prompt of prompt tokens among streams streams on d, in ms: its
// regime's band, capped by the burst under load.
func TTFTRangeMs(d Deployment, streams, prompt int, ttft float64) [2]float64 {
	return Bands[PrefillRegime(streams)].Under(ttft*1000, d.Burst(streams, prompt)*1000)
}

// TimeRatio is measured over predicted time: for a rate, predicted over
// measured, so that above 1 always means the model was too fast.
func TimeRatio(o Oracle, predicted float64) float64 {
	if slower(o.Metric) {
		return o.Measured / predicted
	}
	return predicted / o.Measured
}

// Bands are the held-out oracles' bands under calibration c, by regime.
func (c Calibration) Bands() (map[Regime]Band, error) {
	ratios := map[Regime][]float64{}
	ceiling := 0.0
	for _, o := range Oracles {
		if o.Set != "held-out" {
			continue
		}
		d, err := c.deployment(o)
		if err != nil {
			return nil, err
		}
		p, err := predict(d, o)
		if err != nil {
			return nil, err
		}
		ratios[o.Regime()] = append(ratios[o.Regime()], TimeRatio(o, p))
		if o.Regime() == PrefillLoaded {
			ceiling = max(ceiling, o.Measured/(1000*d.Burst(o.Concurrency, o.Input)))
		}
	}
	out := map[Regime]Band{}
	for r, rs := range ratios {
		sort.Float64s(rs)
		out[r] = Band{Regime: r, N: len(rs), Optimistic: rs[0], Median: median(rs), Pessimistic: rs[len(rs)-1]}
	}
	if b, ok := out[PrefillLoaded]; ok {
		b.Ceiling = ceiling
		out[PrefillLoaded] = b
	}
	return out, nil
}

// Bands are the calibrated model's bands, computed once from the table.
var Bands = mustBands()

func mustBands() map[Regime]Band {
	b, err := Calibrated.Bands()
	if err != nil {
		panic("sizing: " + err.Error())
	}
	for _, r := range Regimes {
		if _, ok := b[r]; !ok {
			panic("sizing: oracles.tsv has no held-out " + string(r) + " measurement")
		}
	}
	return b
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
