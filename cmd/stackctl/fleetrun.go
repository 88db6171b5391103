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
	getenv, err := fleetGetenv()
	if err != nil {
		return err
	}
	e := automation.Engine{ChartDir: os.Getenv("GPU_NODE_POOLS_CHART_DIR")}
	rep, err := automation.RunShard(ctx, automation.ShardRun{
		Op: op, Wave: *wave, Shard: *shard, Stacks: strings.Fields(*stacks),
		ProjectDir: dir, BaseDir: *base, Parallel: *parallel, LogDir: logs,
		Engine: func(stack string) (automation.Engine, error) { return e.ForStack(dir, stack, getenv) },
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

// fleetRecover repairs a stack whose up was killed (automation.Recover):
// with -yes, once the run that held the lock is gone, it removes the lock
// and clears the pending operations, naming each; without, it refuses and
// says what to check.
func fleetRecover(args []string, dir string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fleet recover", flag.ContinueOnError)
	stack := fs.String("stack", "", "the stack whose run was killed")
	yes := fs.Bool("yes", false, "the run that held the lock is gone: remove it and clear the pending operations")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *stack == "" {
		return fmt.Errorf("--stack: want the stack to recover")
	}
	if !*yes {
		return fmt.Errorf("fleet recover: removing %s's lock while its run still goes would let two runs write its state; "+
			"check that the run named in the lock is gone (its job ended, its runner lost), then pass -yes", *stack)
	}
	ctx := context.Background()
	getenv, err := fleetGetenv()
	if err != nil {
		return err
	}
	e, err := automation.Engine{ChartDir: os.Getenv("GPU_NODE_POOLS_CHART_DIR"), Progress: stdout}.ForStack(dir, *stack, getenv)
	if err != nil {
		return fmt.Errorf("stack %s: %w", *stack, err)
	}
	s, err := automation.OpenFromFile(ctx, dir, *stack, e)
	if err != nil {
		return err
	}
	r, err := automation.Recover(ctx, s)
	if r != nil {
		for _, p := range r.Pending {
			fmt.Fprintf(stdout, "cleared pending operation: %s\n", p)
		}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stack %s: lock removed, %d pending operations cleared, %d resources kept; run its up again (a \"creating\" one above may exist outside the state: check it)\n",
		*stack, len(r.Pending), r.Resources)
	return nil
}

// FleetSecretsEnv holds a job's secrets as one JSON object, name to
// value: what ${{ toJSON(secrets) }} gives a workflow step, so that a
// shard job finds each of its stacks' PULUMI_CONFIG_PASSPHRASE_<STACK>
// among the secrets of its wave's environment.
const FleetSecretsEnv = "GPU_NODE_POOLS_FLEET_SECRETS"

// fleetGetenv reads a variable from the environment, else from
// FleetSecretsEnv. A FleetSecretsEnv that is set but not a JSON object of
// strings stops the job at once, naming it: else every stack of the shard
// would fail alone on its missing passphrase, and the cause would be
// nowhere.
func fleetGetenv() (func(string) string, error) {
	var secrets map[string]string
	if raw := os.Getenv(FleetSecretsEnv); raw != "" {
		if err := json.Unmarshal([]byte(raw), &secrets); err != nil {
			return nil, fmt.Errorf("%s: not a JSON object of names to strings, as ${{ toJSON(secrets) }} gives: %w", FleetSecretsEnv, err)
		}
	}
	return func(k string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return secrets[k]
	}, nil
}
