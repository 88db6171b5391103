package automation

import (
	"context"
	"fmt"
	"strings"

	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// LoadStack reads a customer's stack file, Pulumi.<stack>.yaml in
// projectDir beside Pulumi.yaml, into a typed config: the engine decrypts
// its secure values with the stack's own secrets provider (e's Env carries
// the passphrase or the KMS credentials). The stack must exist in e's
// backend (pulumi stack init, or make preview, creates it). The config is
// checked as the program would check it, so a tool learns of every problem
// before it changes anything.
func LoadStack(ctx context.Context, projectDir, stack string, e Engine) (*config.Config, error) {
	s, err := SelectStack(ctx, projectDir, stack, e)
	if err != nil {
		return nil, err
	}
	all, err := s.stack.GetAllConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("stack %s: config: %w", stack, err)
	}
	raw := map[string]string{}
	for k, v := range all {
		if short, ok := strings.CutPrefix(k, config.Namespace+":"); ok {
			raw[short] = v.Value
		}
	}
	if _, err := plan.Load(raw, stack); err != nil {
		return nil, fmt.Errorf("stack %s: %w", stack, err)
	}
	cfg, _, _ := config.Decode(raw) // decodes cleanly: Load found no problem
	return cfg, nil
}
