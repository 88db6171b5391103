package automation

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/fleet"
	"github.com/natron/gpu-node-pools/stacks/plan"
	"github.com/natron/gpu-node-pools/stacks/preflight"
)

// ShardRun is one CI job's share of a fleet operation: its stacks, run
// through the Automation API several at a time on one runner.
type ShardRun struct {
	// Op is fleet.OpPreview, OpUp or OpDrift.
	Op    string
	Wave  string
	Shard int
	// Stacks are the shard's stacks: their files are in ProjectDir.
	Stacks     []string
	ProjectDir string
	// BaseDir is a checkout of the commit before the change (the pull
	// request's base, the previous main): with it, each stack's monthly
	// cost before and after. Empty: no cost change.
	BaseDir string
	// Parallel is how many stacks run at a time (at least 1).
	Parallel int
	// LogDir gets each stack's engine output, <stack>.log.
	LogDir string
	// Engine is each stack's engine: its backend, its own secrets (see
	// Engine.ForStack). An error fails that stack alone.
	Engine func(stack string) (Engine, error)
}

// Validate names each wrong field of the run.
func (r ShardRun) Validate() error {
	var probs []string
	if !slices.Contains(fleet.Ops(), r.Op) {
		probs = append(probs, fmt.Sprintf("op: must be one of %s, got %q", strings.Join(fleet.Ops(), ", "), r.Op))
	}
	if len(r.Stacks) == 0 {
		probs = append(probs, "stacks: want at least one stack")
	}
	if r.LogDir == "" || r.Engine == nil || r.ProjectDir == "" {
		probs = append(probs, "projectDir, logDir and engine are required")
	}
	if len(probs) > 0 {
		return fmt.Errorf("shard: %s", strings.Join(probs, "; "))
	}
	return nil
}

// RunShard runs the shard's operation on each of its stacks, at most
// Parallel at a time, and reports each: a stack that fails (its config,
// its secrets, its lock, the engine) fails alone, and the others go on.
func RunShard(ctx context.Context, r ShardRun) (fleet.ShardReport, error) {
	rep := fleet.ShardReport{Op: r.Op, Wave: r.Wave, Shard: r.Shard, Stacks: make([]fleet.StackResult, len(r.Stacks))}
	if err := r.Validate(); err != nil {
		return rep, err
	}
	if err := os.MkdirAll(r.LogDir, 0o755); err != nil {
		return rep, err
	}
	sem := make(chan struct{}, max(r.Parallel, 1))
	var wg sync.WaitGroup
	for i, stack := range r.Stacks {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				rep.Stacks[i] = fleet.StackResult{Stack: stack, Error: ctx.Err().Error()}
				return
			}
			rep.Stacks[i] = r.runStack(ctx, stack)
		})
	}
	wg.Wait()
	return rep, nil
}

// runStack is one stack's operation, its engine output in its log.
func (r ShardRun) runStack(ctx context.Context, stack string) fleet.StackResult {
	start := time.Now()
	res := fleet.StackResult{Stack: stack, Log: stack + ".log"}
	log, err := os.Create(filepath.Join(r.LogDir, res.Log))
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer log.Close()
	err = r.operate(ctx, stack, log, &res)
	if err != nil {
		res.Error = headline(err)
		fmt.Fprintf(log, "\nstack %s failed: %v\n", stack, err)
	}
	res.Seconds = time.Since(start).Seconds()
	return res
}

func (r ShardRun) operate(ctx context.Context, stack string, log io.Writer, res *fleet.StackResult) error {
	e, err := r.Engine(stack)
	if err != nil {
		return fmt.Errorf("stack %s: %w", stack, err)
	}
	e.Progress, e.ProjectDir = log, r.ProjectDir
	diff := &diffRecorder{}
	e.OnEvent = chainEvents(e.OnEvent, diff.record)
	// a new customer's stack is created by its first preview or up;
	// drift reads stacks that exist
	s, cfg, err := openFile(ctx, r.ProjectDir, stack, e, r.Op != fleet.OpDrift)
	if err != nil {
		return err
	}
	res.MonthlyCost = r.costChange(stack, cfg)
	switch r.Op {
	case fleet.OpPreview:
		res.Changes, err = s.previewChanges(ctx)
	case fleet.OpUp:
		_, res.Changes, err = s.Up(ctx)
	case fleet.OpDrift:
		res.Changes, err = s.Drift(ctx)
	}
	res.Diff = diff.lines()
	return err
}

// costChange is the stack's expected monthly cost before (BaseDir's stack
// file) and after; nil without a base or a price. A stack the base lacks
// cost nothing before.
func (r ShardRun) costChange(stack string, cfg *config.Config) *fleet.CostChange {
	if r.BaseDir == "" {
		return nil
	}
	head, err := plan.Resolve(cfg, stack)
	if err != nil {
		return nil
	}
	after, cur, ok := expected(head)
	if !ok {
		return nil
	}
	c := &fleet.CostChange{After: after, Currency: cur}
	if _, err := os.Stat(filepath.Join(r.BaseDir, "Pulumi."+stack+".yaml")); err == nil {
		base := preflight.Stack(r.BaseDir, stack, func(string, string) bool { return true })
		if base.Err() == nil {
			c.Before, _, _ = expected(base.Plan)
		}
	}
	return c
}

// expected is a plan's expected monthly cost (the nodes its models keep
// up), in its currency.
func expected(p *plan.Stack) (float64, string, bool) {
	totals, _ := p.CostTotals()
	for cur, t := range totals {
		return t.Expected, cur, true // one currency per stack: its target's
	}
	return 0, "", false
}

// OpenFromFile opens a stack of the fleet on its stack file in projectDir,
// as a shard runs it (its secrets decrypted by the engine only): to
// recover it, say. The stack exists in e's backend.
func OpenFromFile(ctx context.Context, projectDir, stack string, e Engine) (*Stack, error) {
	s, _, err := openFile(ctx, projectDir, stack, e, false)
	return s, err
}

// headline puts the engine's own error line first: the CLI's failure
// reads "stack acme: up: failed to run update: exit status 1", then its
// output, where "error: the stack is currently locked ..." says why.
func headline(err error) string {
	msg := err.Error()
	first, _, _ := strings.Cut(msg, "\n")
	for _, line := range strings.Split(msg, "\n")[1:] {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "stderr:"))
		if why, ok := strings.CutPrefix(line, "error: "); ok {
			if i := strings.Index(first, ": failed to run "); i >= 0 {
				first = first[:i]
			}
			return first + ": " + why + "\n" + msg
		}
	}
	return msg
}
