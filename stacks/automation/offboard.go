package automation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
)

// DestroyPlan is what removing a stack deletes.
type DestroyPlan struct {
	// Resources are the stack's resources (not its providers), by URN.
	Resources []string
	// Protected are those of Resources marked protect (a prod stack's
	// pools): a destroy fails on them until they are unprotected.
	Protected []string
	// Changes is the engine's preview of the destroy, by operation; the
	// protected resources are left out of it (the engine refuses to
	// preview their deletion).
	Changes map[apitype.OpType]int
}

// ProtectedError is a destroy refused because resources are protected.
type ProtectedError struct {
	Stack string
	URNs  []string
}

func (e *ProtectedError) Error() string {
	return fmt.Sprintf("stack %s: %d protected resources, which a destroy does not delete unless asked to unprotect them:\n  %s",
		e.Stack, len(e.URNs), strings.Join(e.URNs, "\n  "))
}

// PlanDestroy reads the stack's state and previews its destroy; it
// changes nothing.
func (s *Stack) PlanDestroy(ctx context.Context) (*DestroyPlan, error) {
	dep, err := s.stack.Export(ctx)
	if err != nil {
		return nil, fmt.Errorf("stack %s: export: %w", s.name, err)
	}
	var state apitype.DeploymentV3
	if len(dep.Deployment) > 0 {
		if err := json.Unmarshal(dep.Deployment, &state); err != nil {
			return nil, fmt.Errorf("stack %s: state: %w", s.name, err)
		}
	}
	p := &DestroyPlan{}
	for _, r := range state.Resources {
		if strings.HasPrefix(string(r.Type), "pulumi:") { // the stack and its providers
			continue
		}
		p.Resources = append(p.Resources, string(r.URN))
		if r.Protect {
			p.Protected = append(p.Protected, string(r.URN))
		}
	}
	ch, finish := s.events()
	opts := []optdestroy.Option{optdestroy.EventStreams(ch), optdestroy.ProgressStreams(s.engine.progress()...)}
	if len(p.Protected) > 0 {
		opts = append(opts, optdestroy.Exclude(p.Protected))
	}
	res, err := s.stack.PreviewDestroy(ctx, opts...)
	finish(err)
	if err != nil {
		return nil, fmt.Errorf("stack %s: preview destroy: %w", s.name, err)
	}
	p.Changes = res.ChangeSummary
	return p, nil
}

// Unprotect clears protect on every resource of the stack, in its state
// (pulumi state unprotect --all): the one step before a destroy that may
// delete a prod stack's pools.
func (s *Stack) Unprotect(ctx context.Context) error {
	return s.cli(ctx, "unprotect", "state", "unprotect", "--all", "--yes", "--non-interactive", "--stack", s.name)
}

// Remove deletes the stack, its state, history and backups from the
// backend, and its stack file from the workspace (pulumi stack rm
// --remove-backups, which the Automation API's RemoveStack cannot ask
// for: a file backend kept acme.json.bak). A stack that still has
// resources is refused by the engine.
func (s *Stack) Remove(ctx context.Context) error {
	return s.cli(ctx, "remove", "stack", "rm", "--yes", "--remove-backups", "--non-interactive", s.name)
}

// cli runs one Pulumi CLI command in the stack's workspace, with its
// environment.
func (s *Stack) cli(ctx context.Context, what string, args ...string) error {
	ws := s.stack.Workspace()
	var env []string
	for k, v := range ws.GetEnvVars() {
		env = append(env, k+"="+v)
	}
	if home := ws.PulumiHome(); home != "" {
		env = append(env, "PULUMI_HOME="+home)
	}
	if _, stderr, _, err := ws.PulumiCommand().Run(ctx, ws.WorkDir(), nil, nil, nil, env, args...); err != nil {
		return fmt.Errorf("stack %s: %s: %w: %s", s.name, what, err, strings.TrimSpace(stderr))
	}
	return nil
}

// Offboarding says how Offboard may proceed.
type Offboarding struct {
	// Unprotect allows deleting protected resources (a prod stack's pools).
	Unprotect bool
	// Confirm is asked once the plan is known; false stops with nothing
	// changed. Nil: never confirmed.
	Confirm func(*DestroyPlan) bool
}

// ErrNotConfirmed is an offboarding stopped at the confirmation.
var ErrNotConfirmed = errors.New("not confirmed: nothing was changed")

// Offboard removes a customer's stack: it previews the destroy, refuses
// protected resources unless o.Unprotect, asks o.Confirm, then unprotects,
// destroys every resource and removes the stack and its state. Until the
// confirmation nothing is changed; the plan is returned either way.
func Offboard(ctx context.Context, s *Stack, o Offboarding) (*DestroyPlan, error) {
	p, err := s.PlanDestroy(ctx)
	if err != nil {
		return nil, err
	}
	if len(p.Protected) > 0 && !o.Unprotect {
		return p, &ProtectedError{Stack: s.name, URNs: p.Protected}
	}
	if o.Confirm == nil || !o.Confirm(p) {
		return p, fmt.Errorf("stack %s: %w", s.name, ErrNotConfirmed)
	}
	if len(p.Protected) > 0 {
		if err := s.Unprotect(ctx); err != nil {
			return p, err
		}
	}
	if _, err := s.Destroy(ctx); err != nil {
		return p, err
	}
	return p, s.Remove(ctx)
}
