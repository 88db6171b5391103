package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/fleet"
	"github.com/natron/gpu-node-pools/stacks/stackfile"
)

// fleetCmd is stackctl fleet: the fleet's CI plan (matrix) and the
// merged report of its shard jobs (report).
func fleetCmd(args []string, dir string, stdin io.Reader, stdout io.Writer) error {
	switch {
	case len(args) > 0 && args[0] == "matrix":
		return fleetMatrix(args[1:], dir, stdin, stdout)
	case len(args) > 0 && args[0] == "report":
		return fleetReport(args[1:], stdout)
	case len(args) > 0 && args[0] == "recover":
		return fleetRecover(args[1:], dir, stdout)
	case len(args) > 0 && slices.Contains(fleet.Ops(), args[0]):
		return fleetRun(args[0], args[1:], dir, stdout)
	}
	return fmt.Errorf("fleet: want a command: matrix, %s, report or recover", strings.Join(fleet.Ops(), ", "))
}

// fleetReport merges shard reports (JSON files, one per shard job) into
// one summary: Markdown for the pull request comment, JSON, or the drift
// run's issue actions (one JSON object a line). -planned (the matrix
// JSON the run was cut from) names the stacks no shard reported.
func fleetReport(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fleet report", flag.ContinueOnError)
	format := fs.String("format", "markdown", "markdown, json or issues")
	planned := fs.String("planned", "", "the fleet matrix output the run was cut from: its stacks without a report did not get the change")
	check := fs.Bool("check", false, "after printing, fail when a stack failed or did not run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !slices.Contains([]string{"markdown", "json", "issues"}, *format) {
		return fmt.Errorf("--format: must be markdown, json or issues, got %q", *format)
	}
	if fs.NArg() == 0 && *planned == "" {
		return fmt.Errorf("fleet report: want the shard reports' files (or --planned: a run none of whose shards reported)")
	}
	var reports []fleet.ShardReport
	for _, name := range fs.Args() {
		var r fleet.ShardReport
		if err := readJSON(name, &r, "a shard report"); err != nil {
			return err
		}
		reports = append(reports, r)
	}
	s := fleet.Merge(reports)
	if *planned != "" {
		stacks, err := plannedStacks(*planned)
		if err != nil {
			return err
		}
		s.Planned(stacks)
	}
	if err := writeSummary(s, *format, stdout); err != nil {
		return err
	}
	if *check && (s.Failed > 0 || len(s.NotRun) > 0) {
		return fmt.Errorf("fleet %s: %d stacks failed, %d did not run", s.Op, s.Failed, len(s.NotRun))
	}
	return nil
}

func writeSummary(s fleet.Summary, format string, stdout io.Writer) error {
	switch format {
	case "markdown":
		fmt.Fprint(stdout, s.Markdown())
		return nil
	case "issues":
		enc := json.NewEncoder(stdout)
		for _, is := range fleet.DriftIssues(s) {
			if err := enc.Encode(is); err != nil {
				return err
			}
		}
		return nil
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, string(b))
	return nil
}

// plannedStacks are the stacks of a fleet matrix output: a preview's one
// matrix or an up's matrix per wave.
func plannedStacks(name string) ([]string, error) {
	var top map[string]json.RawMessage
	if err := readJSON(name, &top, "a fleet matrix"); err != nil {
		return nil, fmt.Errorf("--planned: %w", err)
	}
	var waves []fleet.Wave
	if raw, ok := top["matrix"]; ok { // a preview's: {"count": N, "matrix": ...}
		var w fleet.Wave
		if err := json.Unmarshal(raw, &w.Matrix); err != nil {
			return nil, fmt.Errorf("--planned: %s: matrix: %w", name, err)
		}
		waves = append(waves, w)
	}
	for _, name := range fleet.Waves() {
		if raw, ok := top[name]; ok {
			var w fleet.Wave
			if err := json.Unmarshal(raw, &w); err != nil {
				return nil, fmt.Errorf("--planned: wave %s: %w", name, err)
			}
			waves = append(waves, w)
		}
	}
	if len(waves) == 0 {
		return nil, fmt.Errorf("--planned: %s: not a fleet matrix (no matrix, no wave)", name)
	}
	var out []string
	for _, w := range waves {
		out = append(out, w.Matrix.Stacks()...)
	}
	return out, nil
}

func readJSON(name string, v any, what string) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: not %s: %w", name, what, err)
	}
	return nil
}

// fleetMatrix prints the GitHub Actions matrix of the fleet's stacks (the
// stack files): for a preview, the stacks a change touches (--changed:
// the changed paths, one per line, "-" for standard input) in shards of at
// most --shard-size; for an up, every stack in its wave, each wave in
// shards; for a drift run, every stack in shards (drift has no order).
func fleetMatrix(args []string, dir string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("fleet matrix", flag.ContinueOnError)
	op := fs.String("op", "preview", "preview (the stacks a change touches), up (every stack, in waves) or drift (every stack)")
	size := fs.Int("shard-size", 10, "stacks per CI job")
	changed := fs.String("changed", "", `file of the changed paths, one per line ("-": standard input); without it, every stack`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	members, err := fleetMembers(dir)
	if err != nil {
		return err
	}
	if err := fleet.Validate(len(members), *size); err != nil {
		return err
	}
	stacks := make([]string, len(members))
	for i, m := range members {
		stacks[i] = m.Stack
	}
	var out any
	switch *op {
	case fleet.OpPreview:
		if *changed != "" {
			paths, err := readLines(*changed, stdin)
			if err != nil {
				return fmt.Errorf("--changed: %w", err)
			}
			stacks = fleet.Affected(paths, stacks)
		}
		out = fleet.Wave{Count: len(stacks), Matrix: fleet.Shards(stacks, *size)}
	case fleet.OpUp:
		out = fleet.InWaves(members, *size)
	case fleet.OpDrift:
		if *changed != "" {
			return fmt.Errorf("--changed: a drift run looks at every stack; --changed is for --op preview")
		}
		out = fleet.Wave{Count: len(stacks), Matrix: fleet.Shards(stacks, *size)}
	default:
		return fmt.Errorf("--op: must be one of %s, got %q", strings.Join(fleet.Ops(), ", "), *op)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, string(b))
	return nil
}

// fleetMembers are the stack files' stacks with their waves; every stack
// whose fleet block is wrong is named, at once.
func fleetMembers(dir string) ([]fleet.Member, error) {
	var out []fleet.Member
	var problems []string
	for _, s := range stackfile.Stacks(dir) {
		f, err := stackfile.Read(dir, s, "secret")
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		var spec fleet.Spec
		if raw := f.Raw[config.Key("fleet")]; raw != "" {
			dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&spec); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %s: %v", s, config.Key("fleet"), err))
				continue
			}
		}
		for _, e := range spec.Validate(field.NewPath(config.Key("fleet"))) {
			problems = append(problems, s+": "+e.Error())
		}
		out = append(out, fleet.Member{Stack: s, Wave: spec.WaveOf()})
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	return out, nil
}

func readLines(name string, stdin io.Reader) ([]string, error) {
	var b []byte
	var err error
	if name == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, err
	}
	return strings.Split(string(b), "\n"), nil
}
