package program

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// Every part the example stacks make has its registrar, and every
// registrar registers a part one of them makes: the loop in
// deployWorkloads cannot skip a part, nor keep a registrar no plan uses.
// The parts come in the order they are registered: the platform and the
// policies before what they admit, GitOps last.
func TestEveryPartHasItsRegistrar(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, stack := range []string{"dev", "prod"} {
		c := stacktest.Config(t, stack)
		// neither stack installs the log collector: this one does
		c.Logging.Install, c.Logging.LokiURL = true, "http://loki-gateway.loki.svc/loki/api/v1/push"
		if c.Policies.AllowedRegistries.Registries != nil {
			c.Policies.AllowedRegistries.Registries = append(c.Policies.AllowedRegistries.Registries, "docker.io/grafana/alloy", "quay.io/prometheus-operator")
		}
		p, err := plan.Resolve(c, stack)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, part := range p.Parts() {
			keys = append(keys, part.Key())
			seen[part.Key()] = true
			if _, ok := registrars[part.Key()]; !ok {
				t.Errorf("%s: part %s has no registrar", stack, part.Key())
			}
		}
		if keys[0] != "platform" || (p.GitOps != nil && keys[len(keys)-1] != "gitops") {
			t.Errorf("%s: parts in order %v", stack, keys)
		}
	}
	if diff := cmp.Diff(slices.Sorted(maps.Keys(registrars)), slices.Sorted(maps.Keys(seen))); diff != "" {
		t.Errorf("registrars (-) against the parts the stacks make (+):\n%s", diff)
	}
}
