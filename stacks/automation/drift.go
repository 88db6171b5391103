package automation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optrefresh"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
)

// Drift reads what is really there into a preview of the stack's state
// (refresh --preview-only: the state is not written) and counts what
// differs by operation: "update" for a resource changed outside Pulumi,
// "delete" for one that is gone. A stack that renders to files has no
// cluster to read: its program is previewed against its state instead,
// so a change that never went out shows.
func (s *Stack) Drift(ctx context.Context) (map[string]int, error) {
	if s.renderOnly {
		return s.previewChanges(ctx)
	}
	ch, finish := s.events()
	res, err := s.stack.PreviewRefresh(ctx, optrefresh.EventStreams(ch), optrefresh.ProgressStreams(s.engine.progress()...))
	finish(err)
	if err != nil {
		return nil, fmt.Errorf("stack %s: drift: %w", s.name, err)
	}
	return byOp(res.ChangeSummary), nil
}

// previewChanges is Preview with the operations as plain strings.
func (s *Stack) previewChanges(ctx context.Context) (map[string]int, error) {
	c, err := s.Preview(ctx)
	return byOp(c), err
}

func byOp(c map[apitype.OpType]int) map[string]int {
	out := map[string]int{}
	for op, n := range c {
		out[string(op)] = n
	}
	return out
}

// diffRecorder keeps, from an operation's events, one line per resource
// that changes: its operation, type and name, and the properties that
// differ.
type diffRecorder struct {
	mu    sync.Mutex
	found []string
}

func (d *diffRecorder) record(_ string, e events.EngineEvent) {
	pre := e.ResourcePreEvent
	if pre == nil {
		return
	}
	m := pre.Metadata
	switch m.Op {
	case apitype.OpSame, apitype.OpRead, apitype.OpRefresh:
		if len(m.Diffs) == 0 {
			return
		}
	}
	line := fmt.Sprintf("%s %s %s", m.Op, m.Type, m.URN[strings.LastIndex(m.URN, "::")+2:])
	if len(m.Diffs) > 0 {
		line += " (" + strings.Join(m.Diffs, ", ") + ")"
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.found = append(d.found, line)
}

// lines are the recorded lines, sorted.
func (d *diffRecorder) lines() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Sorted(slices.Values(d.found))
}

// chainEvents calls both handlers.
func chainEvents(a, b func(string, events.EngineEvent)) func(string, events.EngineEvent) {
	if a == nil {
		return b
	}
	return func(stack string, e events.EngineEvent) {
		a(stack, e)
		b(stack, e)
	}
}
