package automation

import (
	"context"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"

	"github.com/natron/gpu-node-pools/stacks/config"
)

// ConfigMap renders a typed config as stack config: the same keys and
// values as a Pulumi.<stack>.yaml, blocks holding secrets as secrets.
func ConfigMap(cfg *config.Config) (auto.ConfigMap, error) {
	values, err := config.Encode(cfg)
	if err != nil {
		return nil, err
	}
	cm := auto.ConfigMap{}
	for _, v := range values {
		cm[v.Key] = auto.ConfigValue{Value: v.Value, Secret: v.Secret}
	}
	return cm, nil
}

// replaceConfig makes the stack's config exactly cm: keys of the project
// namespace that cm no longer has are removed. The keys are read from the
// workspace's stack file, which the CLI keeps the config in: no CLI run,
// and no secret decrypted just to learn a key.
func replaceConfig(ctx context.Context, s auto.Stack, cm auto.ConfigMap) error {
	var keys []string
	if settings, err := s.Workspace().StackSettings(ctx, s.Name()); err == nil {
		for k := range settings.Config {
			keys = append(keys, k.String())
		}
	} else {
		// no stack file of ours (a workspace we did not write): the CLI's view
		current, err := s.GetAllConfig(ctx)
		if err != nil {
			return err
		}
		for k := range current {
			keys = append(keys, k)
		}
	}
	var stale []string
	for _, k := range keys {
		if _, keep := cm[k]; !keep && strings.HasPrefix(k, config.Namespace+":") {
			stale = append(stale, k)
		}
	}
	if len(stale) > 0 {
		if err := s.RemoveAllConfig(ctx, stale); err != nil {
			return err
		}
	}
	return s.SetAllConfig(ctx, cm)
}
