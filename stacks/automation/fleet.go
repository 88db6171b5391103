package automation

import (
	"context"
	"sync"
	"time"

	"github.com/natron/gpu-node-pools/stacks/config"
)

// CustomerStack is one stack of a fleet: its name and its typed config.
type CustomerStack struct {
	Name   string
	Config *config.Config
}

// FleetResult is what happened to one stack of a fleet operation.
type FleetResult struct {
	Stack string
	// Changes counts resources by operation (create, update, same, ...).
	Changes map[string]int
	// Err is this stack's failure; other stacks are not affected by it.
	Err     error
	Elapsed time.Duration
}

// PreviewFleet previews many customer stacks, at most parallel at a time.
// Results come back in the order of stacks.
func PreviewFleet(ctx context.Context, fleet []CustomerStack, e Engine, parallel int) []FleetResult {
	return runFleet(ctx, fleet, e, parallel, func(ctx context.Context, s *Stack) (map[string]int, error) {
		return s.previewChanges(ctx)
	})
}

// UpFleet applies many customer stacks, at most parallel at a time.
func UpFleet(ctx context.Context, fleet []CustomerStack, e Engine, parallel int) []FleetResult {
	return runFleet(ctx, fleet, e, parallel, func(ctx context.Context, s *Stack) (map[string]int, error) {
		_, changes, err := s.Up(ctx)
		return changes, err
	})
}

func runFleet(ctx context.Context, fleet []CustomerStack, e Engine, parallel int,
	op func(context.Context, *Stack) (map[string]int, error),
) []FleetResult {
	if parallel < 1 {
		parallel = 1
	}
	results := make([]FleetResult, len(fleet))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, cs := range fleet {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			res := FleetResult{Stack: cs.Name}
			defer func() {
				res.Elapsed = time.Since(start)
				results[i] = res
			}()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				res.Err = ctx.Err()
				return
			}
			s, err := OpenStack(ctx, cs.Name, cs.Config, e)
			if err != nil {
				res.Err = err
				return
			}
			res.Changes, res.Err = op(ctx, s)
		}()
	}
	wg.Wait()
	return results
}
