package stacks

import (
	"fmt"
	"strings"
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

// problems collects problems under key paths.
type problems []Problem

func (ps *problems) add(path, format string, args ...any) {
	*ps = append(*ps, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// err is nil when there were no problems.
func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &ConfigError{Problems: ps}
}

// key is the full path of a top-level key.
func key(k string) string { return Namespace + ":" + k }
