package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/natron/gpu-node-pools/internal/sizing"
)

// oracles is gpu-plan oracles: what the throughput model is fitted on
// and judged by, as the Markdown the README shows (a test holds the
// README to it): the measurements' coverage, the held-out errors by
// regime, and with --all every measurement with its source.
func oracles(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("gpu-plan oracles", flag.ContinueOnError)
	all := fs.Bool("all", false, "list every measurement, the model's figure and its source")
	if err := fs.Parse(args); err != nil {
		return err
	}
	fmt.Fprintln(out, coverage())
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| regime | held out | measured ÷ model, fastest – slowest | median |")
	fmt.Fprintln(out, "|---|---|---|---|")
	for _, r := range sizing.Regimes {
		b := sizing.Bands[r]
		fmt.Fprintf(out, "| %s | %d | %.2f – %.2f | %.2f |\n", r, b.N, b.Optimistic, b.Pessimistic, b.Median)
	}
	for _, r := range sizing.Regimes {
		if b := sizing.Bands[r]; b.Ceiling > 0 {
			fmt.Fprintf(out, "\nA range's slow end for the %s is also at most %.2f times the design's burst (every stream's prompt at once, prefilled in turn): the most a held-out row measured over its own.\n", r, b.Ceiling)
		}
	}
	if !*all {
		return nil
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| id | set | setup | metric | measured | model | source (date) |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|")
	for _, o := range sizing.Oracles {
		p, err := sizing.Calibrated.Predict(o)
		if err != nil {
			return err
		}
		setup := fmt.Sprintf("%s %s on %s, TP %d, %d × %d in / %d out, %s", o.Model, cmp.Or(o.Quantization, "bf16"), o.GPU, o.TensorParallel, o.Concurrency, o.Input, o.Output, o.Engine)
		fmt.Fprintf(out, "| %s | %s | %s | %s | %.4g | %.4g | %s (%s) |\n", o.ID, o.Set, setup, o.Metric, o.Measured, p, o.Source, o.Date)
	}
	return nil
}

// coverage says in one paragraph what the measurements span.
func coverage() string {
	var gpus, models, engines []string
	var tps []int
	fit, minC, maxC := 0, 1<<30, 0
	precisions := map[string]bool{}
	for _, o := range sizing.Oracles {
		gpus, models, engines = appendNew(gpus, o.GPU), appendNew(models, o.Model), appendNew(engines, o.Engine)
		if !slices.Contains(tps, o.TensorParallel) {
			tps = append(tps, o.TensorParallel)
		}
		if o.Set == "fit" {
			fit++
		}
		minC, maxC = min(minC, o.Concurrency), max(maxC, o.Concurrency)
		precisions[cmp.Or(o.Quantization, "bf16")] = true
	}
	slices.Sort(tps)
	var tp []string
	for _, n := range tps {
		tp = append(tp, fmt.Sprint(n))
	}
	var prec []string
	for p := range precisions {
		prec = append(prec, p)
	}
	slices.Sort(prec)
	return fmt.Sprintf("%d published measurements (`internal/sizing/oracles.tsv`), %d fitted on and %d held out: GPUs %s; tensor parallelism %s; batch or concurrency %d to %d; %s weights; models %s; engines %s.",
		len(sizing.Oracles), fit, len(sizing.Oracles)-fit, strings.Join(gpus, ", "), strings.Join(tp, ", "), minC, maxC,
		strings.Join(prec, " and "), strings.Join(models, ", "), strings.Join(engines, ", "))
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
