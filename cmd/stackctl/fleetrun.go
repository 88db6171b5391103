package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/natron/gpu-node-pools/stacks/automation"
	"github.com/natron/gpu-node-pools/stacks/fleet"
)

// fleetRun is stackctl fleet preview|up|drift: one shard job's stacks
// through the Automation API, several at a time, each with its own log,
// secrets and result, written as the shard's report (-out/shard-<n>.json,
// the logs beside it). It fails when a stack failed, after the report is
// written: the later waves then do not start.
func fleetRun(op string, args []string, dir string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fleet "+op, flag.ContinueOnError)
	stacks := fs.String("stacks", "", "the shard's stacks, space-separated (the matrix's stacks)")
	shard := fs.Int("shard", 1, "the shard's number (the matrix's shard)")
	wave := fs.String("wave", "", "the wave, for the report")
	parallel := fs.Int("parallel", 4, "stacks at a time on this runner")
	base := fs.String("base", "", "a checkout of the commit before the change: each stack's monthly cost before and after")
	out := fs.String("out", "fleet-report", "directory for the report and the stacks' logs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *parallel < 1 {
		return fmt.Errorf("--parallel: must be >= 1, got %d", *parallel)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logs := filepath.Join(*out, fmt.Sprintf("shard-%d-logs", *shard))
	e := automation.Engine{ChartDir: os.Getenv("GPU_NODE_POOLS_CHART_DIR")}
	rep, err := automation.RunShard(ctx, automation.ShardRun{
		Op: op, Wave: *wave, Shard: *shard, Stacks: strings.Fields(*stacks),
		ProjectDir: dir, BaseDir: *base, Parallel: *parallel, LogDir: logs,
		Engine: func(stack string) (automation.Engine, error) { return e.ForStack(dir, stack, os.Getenv) },
	})
	if err != nil {
		return err
	}
	for i := range rep.Stacks {
		rep.Stacks[i].Log = filepath.Join(filepath.Base(logs), rep.Stacks[i].Log)
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	file := filepath.Join(*out, fmt.Sprintf("shard-%d.json", *shard))
	if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
		return err
	}
	var failed []string
	for _, r := range rep.Stacks {
		line := fmt.Sprintf("%s: %s in %.0f s", r.Stack, fleet.ChangeLine(r.Changes), r.Seconds)
		if r.Error != "" {
			failed = append(failed, r.Stack)
			line = fmt.Sprintf("%s: failed: %s", r.Stack, fleet.FirstLine(r.Error))
		}
		fmt.Fprintln(stdout, line)
	}
	fmt.Fprintf(stdout, "report: %s\n", file)
	if len(failed) > 0 {
		return fmt.Errorf("fleet %s: %d of %d stacks failed: %s", op, len(failed), len(rep.Stacks), strings.Join(failed, " "))
	}
	return nil
}
