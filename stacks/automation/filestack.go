package automation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"

	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
	"github.com/natron/gpu-node-pools/stacks/program"
	"github.com/natron/gpu-node-pools/stacks/stackfile"
)

// openFile opens a fleet stack on its own stack file: the inline program
// runs on a copy of Pulumi.<stack>.yaml (and Pulumi.yaml's config
// declarations) in the stack's work directory, as `pulumi preview` in the
// project runs on the file itself. Its secure values stay encrypted for
// the engine to decrypt, with the file's own salt or key; what this
// process resolves (relative paths, the chart directory) the program
// applies (program.Resolved), and nothing is written back. That saves the
// three CLI runs of loading the config and writing it to an inline
// stack's settings (select in the project, a decrypting read, a write):
// half of a small stack's preview in a fleet shard.
//
// The config is checked first, secure values as placeholders, so that a
// bad stack file fails with every problem before the engine starts; the
// typed config returned is that check's, for what needs no secret (cost,
// render mode). create makes the stack in e's backend when it is not
// there (a new customer's first preview or up).
func openFile(ctx context.Context, projectDir, stack string, e Engine, create bool) (*Stack, *config.Config, error) {
	// the name first: it becomes a path
	if err := e.admit(stack); err != nil {
		return nil, nil, err
	}
	f, err := stackfile.Read(projectDir, stack, "secret")
	if err != nil {
		return nil, nil, fmt.Errorf("stack %s: %w", stack, err)
	}
	raw := stackfile.Unqualified(f.Raw)
	if _, err := plan.Load(raw, stack); err != nil {
		return nil, nil, fmt.Errorf("stack %s: %w", stack, err)
	}
	cfg, _, _ := config.Decode(raw) // decodes cleanly: Load found no problem
	project, err := workspace.LoadProject(filepath.Join(projectDir, "Pulumi.yaml"))
	if err != nil {
		return nil, nil, fmt.Errorf("stack %s: %w", stack, err)
	}
	opts, dir, err := e.workspace(stack, project.Config)
	if err != nil {
		return nil, nil, fmt.Errorf("stack %s: %w", stack, err)
	}
	file, err := os.ReadFile(stackfile.Path(projectDir, stack))
	if err != nil {
		return nil, nil, fmt.Errorf("stack %s: %w", stack, err)
	}
	if err := os.WriteFile(stackfile.Path(dir, stack), file, 0o600); err != nil {
		return nil, nil, fmt.Errorf("stack %s: %w", stack, err)
	}
	open := auto.SelectStackInlineSource
	if create {
		open = auto.UpsertStackInlineSource
	}
	s, err := open(ctx, stack, config.Namespace, program.Resolved(e.resolve), opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("stack %s: select or create: %w", stack, err)
	}
	return &Stack{name: stack, engine: e, stack: s, renderOnly: cfg.RenderDir != ""}, cfg, nil
}
