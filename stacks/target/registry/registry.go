// Package registry maps the target config value to its implementation.
// A new target is its own package under stacks/target and one line here.
package registry

import (
	"github.com/natron/gpu-node-pools/stacks/target"
	"github.com/natron/gpu-node-pools/stacks/target/aks"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

// targets in the order they are documented.
var targets = []target.Target{
	aks.Target{},
	natron.Target{},
}

// All lists the targets in documentation order.
func All() []target.Target { return targets }

// Lookup finds a target by its config value.
func Lookup(name string) (target.Target, bool) {
	for _, t := range targets {
		if string(t.Name()) == name {
			return t, true
		}
	}
	return nil, false
}

// Names lists the target config values in documentation order.
func Names() []string {
	out := make([]string, len(targets))
	for i, t := range targets {
		out[i] = string(t.Name())
	}
	return out
}
