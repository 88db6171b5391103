package automation

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/optrefresh"
)

// Recovery is what Recover found and did.
type Recovery struct {
	// Pending are the operations the interrupted run left open, as
	// "<type> <urn>": a "creating" one may exist outside the state (check
	// it, and import it if it does; the next up creates it otherwise).
	Pending []string
	// Resources is how many resources the state holds afterwards.
	Resources int
}

// Recover repairs a stack after its run was killed (a cancelled CI job, a
// lost runner), as Pulumi documents for interrupted updates
// (docs/iac/operations/troubleshooting/interrupted-updates): the lock the
// dead run left is removed (pulumi cancel: call this only when that run
// is gone), then a refresh clears the pending operations
// (--clear-pending-creates), keeping every resource the state holds. A
// stack that renders to files has no cluster to refresh from: its pending
// operations are dropped from the state (export, edit, import, as Pulumi
// documents for editing state), since its next up writes every file
// again. The next up finishes the change.
func Recover(ctx context.Context, s *Stack) (*Recovery, error) {
	pending, _, err := s.pending(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.stack.Cancel(ctx); err != nil {
		return nil, fmt.Errorf("stack %s: remove the lock (pulumi cancel): %w", s.name, err)
	}
	r := &Recovery{Pending: pending}
	if len(pending) > 0 && s.renderOnly {
		if err := s.dropPending(ctx); err != nil {
			return r, err
		}
	} else if len(pending) > 0 {
		ch, finish := s.events()
		_, err := s.stack.Refresh(ctx, optrefresh.ClearPendingCreates(), optrefresh.EventStreams(ch),
			optrefresh.ProgressStreams(s.engine.progress()...))
		finish(err)
		if err != nil {
			return r, fmt.Errorf("stack %s: clear the pending operations (pulumi refresh --clear-pending-creates): %w", s.name, err)
		}
	}
	left, n, err := s.pending(ctx)
	if err != nil {
		return r, err
	}
	r.Resources = n
	if len(left) > 0 {
		return r, fmt.Errorf("stack %s: pending operations left after the refresh: %v", s.name, left)
	}
	return r, nil
}

// pending lists the state's pending operations and counts its resources.
func (s *Stack) pending(ctx context.Context) ([]string, int, error) {
	d, err := s.stack.Export(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("stack %s: export: %w", s.name, err)
	}
	var state struct {
		Resources []json.RawMessage `json:"resources"`
		Pending   []struct {
			Resource struct {
				URN string `json:"urn"`
			} `json:"resource"`
			Type string `json:"type"`
		} `json:"pending_operations"`
	}
	if len(d.Deployment) > 0 {
		if err := json.Unmarshal(d.Deployment, &state); err != nil {
			return nil, 0, fmt.Errorf("stack %s: export: %w", s.name, err)
		}
	}
	var out []string
	for _, p := range state.Pending {
		out = append(out, p.Type+" "+p.Resource.URN)
	}
	return out, len(state.Resources), nil
}

// dropPending removes the state's pending operations: export, edit,
// import.
func (s *Stack) dropPending(ctx context.Context) error {
	d, err := s.stack.Export(ctx)
	if err != nil {
		return fmt.Errorf("stack %s: export: %w", s.name, err)
	}
	var state map[string]json.RawMessage
	if err := json.Unmarshal(d.Deployment, &state); err != nil {
		return fmt.Errorf("stack %s: export: %w", s.name, err)
	}
	delete(state, "pending_operations")
	if d.Deployment, err = json.Marshal(state); err != nil {
		return err
	}
	if err := s.stack.Import(ctx, d); err != nil {
		return fmt.Errorf("stack %s: import the state without its pending operations: %w", s.name, err)
	}
	return nil
}
