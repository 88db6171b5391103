package fleet

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Member is one stack of the fleet and its wave.
type Member struct {
	Stack string
	Wave  string
}

// Shard is one CI job's stacks.
type Shard struct {
	// Shard numbers the job within its wave (or the preview), from 1.
	Shard int `json:"shard"`
	// Stacks are the job's stacks, space-separated (a matrix value is a
	// string or a number).
	Stacks string `json:"stacks"`
}

// Matrix is a GitHub Actions matrix: one job per shard.
type Matrix struct {
	Include []Shard `json:"include"`
}

// Wave is one wave's matrix and how many stacks it holds (a workflow
// skips a wave with none: an empty matrix is an error there).
type Wave struct {
	Count  int    `json:"count"`
	Matrix Matrix `json:"matrix"`
}

// Shards cuts stacks, in order, into shards of at most size stacks, as
// even as that allows (200 stacks by 20: ten of 20; 21 by 20: 11 and 10).
func Shards(stacks []string, size int) Matrix {
	m := Matrix{Include: []Shard{}}
	if len(stacks) == 0 {
		return m
	}
	size = max(size, 1)
	n := (len(stacks) + size - 1) / size
	for i := range n {
		lo, hi := i*len(stacks)/n, (i+1)*len(stacks)/n
		m.Include = append(m.Include, Shard{Shard: i + 1, Stacks: strings.Join(stacks[lo:hi], " ")})
	}
	return m
}

// InWaves is each wave's shards: the stacks of that wave, sharded.
func InWaves(members []Member, size int) map[string]Wave {
	out := map[string]Wave{}
	for _, w := range Waves() {
		var stacks []string
		for _, m := range members {
			if m.Wave == w {
				stacks = append(stacks, m.Stack)
			}
		}
		out[w] = Wave{Count: len(stacks), Matrix: Shards(stacks, size)}
	}
	return out
}

var stackFile = regexp.MustCompile(`^Pulumi\.([^/]+)\.yaml$`)

// Affected are the stacks a change touches, in the order of all: when
// every changed path is a stack file (Pulumi.<stack>.yaml at the root),
// those stacks that still exist; when anything else changed (code,
// charts, go.mod, the project file, the shared assets), every stack.
func Affected(changed, all []string) []string {
	var named []string
	for _, p := range changed {
		m := stackFile.FindStringSubmatch(path.Clean(strings.TrimSpace(p)))
		switch {
		case strings.TrimSpace(p) == "":
			continue
		case m == nil:
			return all
		default:
			named = append(named, m[1])
		}
	}
	var out []string
	for _, s := range all {
		if slices.Contains(named, s) {
			out = append(out, s)
		}
	}
	return out
}

// Validate checks a fleet's shard size for the CI: a matrix holds at most
// 256 jobs (GitHub Actions' limit).
func Validate(stacks, size int) error {
	if size < 1 {
		return fmt.Errorf("--shard-size: must be >= 1 stack per job, got %d", size)
	}
	if jobs := (stacks + size - 1) / size; jobs > 256 {
		return fmt.Errorf("--shard-size: %d stacks in shards of %d are %d jobs, above the 256 a GitHub Actions matrix holds; use %d or more", stacks, size, jobs, (stacks+255)/256)
	}
	return nil
}
