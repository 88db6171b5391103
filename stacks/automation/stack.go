package automation

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optrefresh"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/secret"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
	"github.com/natron/gpu-node-pools/stacks/preflight"
	"github.com/natron/gpu-node-pools/stacks/program"
	"github.com/natron/gpu-node-pools/stacks/stackfile"
)

var stackNameRe = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

// Stack is one customer stack driven through the Automation API. It runs
// the very Program that main.go runs.
type Stack struct {
	name       string
	engine     Engine
	stack      auto.Stack
	renderOnly bool
}

// OpenStack validates cfg and then creates or selects the stack and writes
// its config. An invalid config fails here, before the engine starts.
func OpenStack(ctx context.Context, name string, cfg *config.Config, e Engine) (*Stack, error) {
	return openStack(ctx, name, cfg, program.Program, e, false)
}

// OpenWorkloadStack is OpenStack for program.WorkloadProgram: the stack's
// Kubernetes side applied to the cluster kubeconfig reaches, without pools.
// A rendering stack (renderDir) is applied as its GitOps tool would apply
// the render, nothing written to files: no Secrets with secret values,
// ExternalSecrets and the GitOps objects instead (a staging check).
func OpenWorkloadStack(ctx context.Context, name string, cfg *config.Config, kubeconfig secret.Secret, e Engine) (*Stack, error) {
	if kubeconfig == "" {
		return nil, fmt.Errorf("stack %s: a workload stack needs the cluster's kubeconfig", name)
	}
	s, err := openStack(ctx, name, cfg, program.WorkloadProgram(kubeconfig), e, false)
	if err != nil {
		return nil, err
	}
	s.renderOnly = false // its objects are in a cluster
	return s, nil
}

// openStack validates cfg, then selects or creates the stack and replaces
// its config; fresh (an empty backend of our own) creates it directly,
// with no select to fail first and no old config to read.
func openStack(ctx context.Context, name string, cfg *config.Config, program pulumi.RunFunc, e Engine, fresh bool) (*Stack, error) {
	if cfg == nil {
		return nil, fmt.Errorf("stack %s: config is required", name)
	}
	cfg = e.resolve(cfg)
	if _, err := plan.Resolve(cfg, name); err != nil {
		return nil, fmt.Errorf("stack %s: %w", name, err)
	}
	if err := e.admit(name); err != nil {
		return nil, err
	}
	cm, err := ConfigMap(cfg)
	if err != nil {
		return nil, fmt.Errorf("stack %s: %w", name, err)
	}
	opts, err := e.workspaceOptions(name)
	if err != nil {
		return nil, fmt.Errorf("stack %s: %w", name, err)
	}
	open, write := auto.UpsertStackInlineSource, replaceConfig
	if fresh {
		open, write = auto.NewStackInlineSource, func(ctx context.Context, s auto.Stack, cm auto.ConfigMap) error {
			return s.SetAllConfig(ctx, cm)
		}
	}
	s, err := open(ctx, name, config.Namespace, program, opts...)
	if err != nil {
		return nil, fmt.Errorf("stack %s: select or create: %w", name, err)
	}
	if err := write(ctx, s, cm); err != nil {
		return nil, fmt.Errorf("stack %s: config: %w", name, err)
	}
	return &Stack{name: name, engine: e, stack: s, renderOnly: cfg.RenderDir != ""}, nil
}

// admit is what any stack this package opens must pass before the engine
// starts: a name the backends take, and the README's passphrase for dev
// only, as make preview demands.
func (e Engine) admit(name string) error {
	if !stackNameRe.MatchString(name) {
		return fmt.Errorf("stack %q: a stack name is 1-100 letters, digits, '-', '_' or '.'", name)
	}
	if probs := preflight.Passphrase(&stackfile.File{Stack: name, SecretsProvider: e.SecretsProvider}, e.getenv); len(probs) > 0 {
		return fmt.Errorf("%s (Engine.Env)", strings.Join(probs, "\n"))
	}
	return nil
}

// SelectStack opens a stack that exists in e's backend, as the Pulumi CLI
// made it in projectDir (make preview): to offboard it, or to read it. Its
// program is not run.
func SelectStack(ctx context.Context, projectDir, name string, e Engine) (*Stack, error) {
	_, opts, err := e.env()
	if err != nil {
		return nil, err
	}
	s, err := auto.SelectStackLocalSource(ctx, name, projectDir, opts...)
	if err != nil {
		return nil, fmt.Errorf("stack %s in %s: %w", name, projectDir, err)
	}
	return &Stack{name: name, engine: e, stack: s}, nil
}

// Name is the stack's name.
func (s *Stack) Name() string { return s.name }

// events returns a channel for one operation that forwards to OnEvent, and
// finish, which waits until the engine has closed it. An operation that
// failed early (a canceled context, say) may never close it: finish then
// gives up after a short grace instead of blocking the caller.
func (s *Stack) events() (ch chan events.EngineEvent, finish func(opErr error)) {
	ch = make(chan events.EngineEvent)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range ch {
			if s.engine.OnEvent != nil {
				s.engine.OnEvent(s.name, e)
			}
		}
	}()
	return ch, func(opErr error) {
		if opErr == nil {
			<-done
			return
		}
		select {
		case <-done:
		case <-time.After(eventsGrace):
		}
	}
}

// eventsGrace is how long a failed operation's last events may take.
const eventsGrace = 2 * time.Second

// Preview shows what an up would change, by operation.
func (s *Stack) Preview(ctx context.Context) (map[apitype.OpType]int, error) {
	ch, finish := s.events()
	opts := []optpreview.Option{optpreview.EventStreams(ch), optpreview.ProgressStreams(s.engine.progress()...)}
	if s.engine.Diff {
		opts = append(opts, optpreview.Diff())
	} else {
		opts = append(opts, optpreview.SuppressOutputs()) // Outputs() reads them
	}
	res, err := s.stack.Preview(ctx, opts...)
	finish(err)
	if err != nil {
		return nil, fmt.Errorf("stack %s: preview: %w", s.name, err)
	}
	return res.ChangeSummary, nil
}

// Up applies the stack and returns its outputs.
func (s *Stack) Up(ctx context.Context) (auto.OutputMap, map[string]int, error) {
	ch, finish := s.events()
	res, err := s.stack.Up(ctx, optup.EventStreams(ch), optup.ProgressStreams(s.engine.progress()...))
	finish(err)
	if err != nil {
		return nil, nil, fmt.Errorf("stack %s: up: %w", s.name, err)
	}
	return res.Outputs, changes(res.Summary.ResourceChanges), nil
}

// ErrRenderOnly is returned by Refresh for a stack with renderDir: its
// objects exist only as files, so there is no cluster to read them from.
var ErrRenderOnly = errors.New("the stack renders to files (renderDir): there is no cluster to refresh from")

// Refresh reads the real state of the stack's resources into its state.
func (s *Stack) Refresh(ctx context.Context) (map[string]int, error) {
	if s.renderOnly {
		return nil, fmt.Errorf("stack %s: refresh: %w", s.name, ErrRenderOnly)
	}
	ch, finish := s.events()
	res, err := s.stack.Refresh(ctx, optrefresh.EventStreams(ch), optrefresh.ProgressStreams(s.engine.progress()...))
	finish(err)
	if err != nil {
		return nil, fmt.Errorf("stack %s: refresh: %w", s.name, err)
	}
	return changes(res.Summary.ResourceChanges), nil
}

// Destroy deletes every resource of the stack (protected ones refuse).
func (s *Stack) Destroy(ctx context.Context) (map[string]int, error) {
	ch, finish := s.events()
	res, err := s.stack.Destroy(ctx, optdestroy.EventStreams(ch), optdestroy.ProgressStreams(s.engine.progress()...))
	finish(err)
	if err != nil {
		return nil, fmt.Errorf("stack %s: destroy: %w", s.name, err)
	}
	return changes(res.Summary.ResourceChanges), nil
}

// Outputs returns the stack's outputs; secret ones are marked Secret.
func (s *Stack) Outputs(ctx context.Context) (auto.OutputMap, error) {
	out, err := s.stack.Outputs(ctx)
	if err != nil {
		return nil, fmt.Errorf("stack %s: outputs: %w", s.name, err)
	}
	return out, nil
}

func changes(m *map[string]int) map[string]int {
	if m == nil {
		return map[string]int{}
	}
	return *m
}
