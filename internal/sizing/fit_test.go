package sizing

import (
	"flag"
	"fmt"
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/catalog"
)

var refit = flag.Bool("refit", false, "print the calibration fitted on the fit oracles, to paste into calibration.go")

// clone is a deep copy: the fitter changes maps.
func (c Calibration) clone() Calibration {
	c.Engines, c.AllReduceSeconds, c.GPUs = maps.Clone(c.Engines), maps.Clone(c.AllReduceSeconds), maps.Clone(c.GPUs)
	return c
}

// parameter is one fitted constant: how to read and set it, and the
// physical range it is fitted in.
type parameter struct {
	name   string
	get    func(*Calibration) float64
	set    func(*Calibration, float64)
	lo, hi float64
}

// The ranges: an engine step of at most 5 ms and 1 ms per sequence; an
// all-reduce doubling of 1-100 µs; at most 90 % of the data sheet
// bandwidth (what a streaming kernel reaches on HBM or GDDR6) and 80 % of dense
// Tensor Core peak; at least 30 % of either.
const (
	maxStep, maxPerSequence = 5e-3, 1e-3
	minMemory, maxMemory    = 0.3, 0.9
	minCompute, maxCompute  = 0.3, 0.8
)

// engineParam is one of an engine's costs, the field of EngineCost that
// field picks, fitted within lo and hi.
func engineParam(engine, what string, lo, hi float64, field func(*EngineCost) *float64) parameter {
	return parameter{name: engine + " " + what, lo: lo, hi: hi,
		get: func(c *Calibration) float64 {
			e := c.Engines[engine]
			return *field(&e)
		},
		set: func(c *Calibration, v float64) {
			e := c.Engines[engine]
			*field(&e) = v
			c.Engines[engine] = e
		}}
}

// The engine costs fitted: a step of at most 5 ms, 1 ms per sequence, 50
// ms per served request outside the GPU, and an all-reduce a fifth to
// five times vLLM's.
func stepParam(engine string) parameter {
	return engineParam(engine, "step", 1e-6, maxStep, func(e *EngineCost) *float64 { return &e.StepSeconds })
}

func perSequenceParam(engine string) parameter {
	return engineParam(engine, "per sequence", 1e-6, maxPerSequence, func(e *EngineCost) *float64 { return &e.PerSequenceSeconds })
}

func requestParam(engine string) parameter {
	return engineParam(engine, "per request", 1e-6, 50e-3, func(e *EngineCost) *float64 { return &e.RequestSeconds })
}

func allReduceParam(engine string) parameter {
	return engineParam(engine, "all-reduce factor", 0.2, 5, func(e *EngineCost) *float64 { return &e.AllReduce })
}

func gpuParam(g catalog.GPU, compute bool) parameter {
	name := g.Model + " memory"
	if compute {
		name = g.Model + " compute"
	}
	lo, hi := minMemory, maxMemory
	if compute {
		lo, hi = minCompute, maxCompute
	}
	return parameter{name: name, lo: lo, hi: hi,
		get: func(c *Calibration) float64 {
			if compute {
				return c.GPUs[g.Model].Compute
			}
			return c.GPUs[g.Model].Memory
		},
		set: func(c *Calibration, v float64) {
			e := c.GPUs[g.Model]
			if compute {
				e.Compute = v
			} else {
				e.Memory = v
			}
			c.GPUs[g.Model] = e
		}}
}

func linkParam(l catalog.Link) parameter {
	k := LinkKey(l)
	return parameter{name: k + " all-reduce", lo: 1e-6, hi: 100e-6,
		get: func(c *Calibration) float64 { return c.AllReduceSeconds[k] }, set: func(c *Calibration, v float64) { c.AllReduceSeconds[k] = v }}
}

// The fitted parameters. Ties, where no fit oracle separates two
// constants: vLLM V1's per-sequence and per-request costs are
// TensorRT-LLM's (both overlap scheduling with the GPU; no V1 oracle
// measures a first token), every GPU's prefill efficiency is the H100's,
// and the GPUs without an oracle take the A100 SXM's memory efficiency.
var parameters = []parameter{
	stepParam(VLLM), stepParam(VLLMV0), stepParam(TRTLLM),
	perSequenceParam(VLLMV0), perSequenceParam(TRTLLM), allReduceParam(TRTLLM), requestParam(TRTLLM),
	linkParam(catalog.NVLink3), linkParam(catalog.NVLink4),
	gpuParam(catalog.A100SXM80, false), gpuParam(catalog.H100SXM, false), gpuParam(catalog.H200SXM, false), gpuParam(catalog.A10, false),
	gpuParam(catalog.H100SXM, true),
}

// tie applies the ties above.
func tie(c *Calibration) {
	v1 := c.Engines[VLLM]
	v1.PerSequenceSeconds = c.Engines[TRTLLM].PerSequenceSeconds
	v1.RequestSeconds = c.Engines[TRTLLM].RequestSeconds
	c.Engines[VLLM] = v1
	compute := c.GPUs[catalog.H100SXM.Model].Compute
	for _, g := range []catalog.GPU{catalog.A100SXM80, catalog.H200SXM, catalog.A10} {
		e := c.GPUs[g.Model]
		e.Compute = compute
		c.GPUs[g.Model] = e
	}
	c.Fallback = Efficiency{Memory: c.GPUs[catalog.A100SXM80.Model].Memory, Compute: compute}
}

// initial is where the fit starts: data sheet-like guesses (a 1 ms step,
// 0.1 ms per sequence, 20 µs per all-reduce doubling, 70 % of bandwidth,
// 50 % of Tensor Core peak), so that the fit is the same wherever it runs.
func initial() Calibration {
	e := EngineCost{StepSeconds: 1e-3, PerSequenceSeconds: 1e-4}
	trt := e
	trt.AllReduce, trt.RequestSeconds = 1, 1e-3
	eff := Efficiency{Memory: 0.7, Compute: 0.5}
	return Calibration{
		Engines:          map[string]EngineCost{VLLM: e, VLLMV0: e, TRTLLM: trt},
		AllReduceSeconds: map[string]float64{LinkKey(catalog.NVLink3): 20e-6, LinkKey(catalog.NVLink4): 20e-6},
		GPUs:             map[string]Efficiency{catalog.A100SXM80.Model: eff, catalog.H100SXM.Model: eff, catalog.H200SXM.Model: eff, catalog.A10.Model: eff},
		Fallback:         eff,
	}
}

// cost is the sum of squared log ratios over the oracles of set.
func cost(t *testing.T, c Calibration, set string) float64 {
	t.Helper()
	var sum float64
	for _, o := range Oracles {
		if o.Set != set {
			continue
		}
		p, err := c.Predict(o)
		if err != nil {
			t.Fatal(err)
		}
		sum += math.Pow(math.Log(TimeRatio(o, p)), 2)
	}
	return sum
}

// fitCalibration minimises the fit oracles' cost by coordinate descent
// on each parameter's logarithm, with shrinking steps.
func fitCalibration(t *testing.T, start Calibration) Calibration {
	t.Helper()
	c := start.clone()
	tie(&c)
	best := cost(t, c, "fit")
	for step := 0.5; step > 1e-4; step /= 2 {
		for improved := true; improved; {
			improved = false
			for _, p := range parameters {
				for _, f := range []float64{math.Exp(step), math.Exp(-step)} {
					trial := c.clone()
					p.set(&trial, math.Min(p.hi, math.Max(p.lo, p.get(&trial)*f)))
					tie(&trial)
					if got := cost(t, trial, "fit"); got < best-1e-12 {
						c, best, improved = trial, got, true
					}
				}
			}
		}
	}
	return c
}

// The committed calibration is the fit: fitting from the fixed start
// gives each committed constant within 1 % (with -refit it prints them).
func TestFitIsTheCalibration(t *testing.T) {
	t.Parallel()
	fitted := fitCalibration(t, initial())
	var drift []string
	for _, p := range parameters {
		got, want := p.get(&Calibrated), p.get(&fitted)
		if *refit {
			t.Logf("%-32s committed %.4g, fitted %.4g", p.name, got, want)
		}
		if math.Abs(got-want) > 0.01*math.Abs(want)+1e-9 {
			drift = append(drift, fmt.Sprintf("%s: committed %.4g, fitted %.4g", p.name, got, want))
		}
	}
	if len(drift) > 0 {
		t.Errorf("the committed calibration is not the fit (go test ./internal/sizing -run TestFitIsTheCalibration -refit -v prints it):\n%s", strings.Join(drift, "\n"))
	}
	t.Logf("fit oracles' cost: committed %.4f, fitted %.4f", cost(t, Calibrated, "fit"), cost(t, fitted, "fit"))
}
