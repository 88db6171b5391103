package plan

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Problem is one thing wrong with the config, at a key path such as
// gpu-node-pools:pools[1].maxNodes.
type Problem struct {
	Path string
	Msg  string
}

func (p Problem) String() string { return p.Path + ": " + p.Msg }

// ConfigError reports every problem of a config at once.
type ConfigError struct {
	Problems []Problem
}

func newConfigError(errs field.ErrorList) *ConfigError {
	e := &ConfigError{}
	for _, fe := range errs {
		e.Problems = append(e.Problems, Problem{Path: fe.Field, Msg: fe.Detail})
	}
	return e
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid stack config (%d problem", len(e.Problems))
	if len(e.Problems) != 1 {
		b.WriteString("s")
	}
	b.WriteString("):")
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}
