// Package fleet is how a fleet of customer stacks is run on the CI the
// provider already has: which stacks a change touches, their shards (one
// CI job each, several stacks a job) and the waves a rollout goes out in.
// It decides; GitHub Actions schedules.
package fleet

import (
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
)

// Canary is the first wave: the stacks a change reaches before any other.
const Canary = "canary"

// NumberedWaves is how many numbered waves follow the canary: the rollout
// workflow has a job for each, so a stack names one of them.
const NumberedWaves = 3

// Waves are the waves in rollout order.
func Waves() []string {
	out := []string{Canary}
	for i := 1; i <= NumberedWaves; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return out
}

// Spec is a stack's place in the fleet (gpu-node-pools:fleet).
type Spec struct {
	// Wave is the rollout wave the stack goes out in: canary (first), then
	// 1, 2 or 3, each after the one before succeeded everywhere.
	// Default: 3 (the last).
	Wave string `json:"wave,omitempty"`
}

// Validate checks the block as written.
func (s Spec) Validate(p *field.Path) field.ErrorList {
	if s.Wave != "" && !slices.Contains(Waves(), s.Wave) {
		return field.ErrorList{fielderr.NotSupported(p.Child("wave"), s.Wave, Waves())}
	}
	return nil
}

// WaveOf is the stack's wave, the last one when it names none.
func (s Spec) WaveOf() string {
	if s.Wave == "" {
		return strconv.Itoa(NumberedWaves)
	}
	return s.Wave
}
