package fleet

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// StackResult is what one stack's operation did, as a shard's job writes
// it.
type StackResult struct {
	Stack string `json:"stack"`
	// Changes counts resources by operation (create, update, delete,
	// replace, same).
	Changes map[string]int `json:"changes,omitempty"`
	// Diff names each resource that changes (or drifted): its operation,
	// its type and name, and the properties that differ.
	Diff []string `json:"diff,omitempty"`
	// Log is the file, beside the report, with the stack's engine output.
	Log string `json:"log,omitempty"`
	// Error is the failure, whole; the summary shows its first line.
	Error   string  `json:"error,omitempty"`
	Seconds float64 `json:"seconds"`
	// MonthlyCost is the stack's expected monthly cost before and after
	// the change, where it is priced.
	MonthlyCost *CostChange `json:"monthlyCost,omitempty"`
}

// CostChange is a monthly cost before and after, in Currency.
type CostChange struct {
	Before   float64 `json:"before"`
	After    float64 `json:"after"`
	Currency string  `json:"currency"`
}

// ShardReport is one CI job's report: its operation, shard and wave, and
// each of its stacks.
type ShardReport struct {
	Op     string        `json:"op"`
	Wave   string        `json:"wave,omitempty"`
	Shard  int           `json:"shard"`
	Stacks []StackResult `json:"stacks"`
}

// Summary is the shard reports merged: one line of totals, every stack.
type Summary struct {
	Op string `json:"op"`
	// Stacks, Failed, Changed and Unchanged count stacks.
	Stacks    int `json:"stacks"`
	Failed    int `json:"failed"`
	Changed   int `json:"changed"`
	Unchanged int `json:"unchanged"`
	// Results are every stack's, failures first, then by name.
	Results []StackResult `json:"results"`
	// NotRun are the stacks the run planned that no shard reported: an
	// earlier wave failed (or was not approved), so they did not get the
	// change.
	NotRun []string `json:"notRun,omitempty"`
}

// Planned sets NotRun: the planned stacks without a result.
func (s *Summary) Planned(stacks []string) {
	s.NotRun = nil
	for _, p := range stacks {
		if !slices.ContainsFunc(s.Results, func(r StackResult) bool { return r.Stack == p }) {
			s.NotRun = append(s.NotRun, p)
		}
	}
}

// Stacks are the stacks of a matrix's shards.
func (m Matrix) Stacks() []string {
	var out []string
	for _, sh := range m.Include {
		out = append(out, strings.Fields(sh.Stacks)...)
	}
	return out
}

// Marker heads the pull request comment, so that the workflow finds and
// updates the one comment instead of adding another.
const Marker = "<!-- gpu-node-pools fleet report -->"

// Merge merges the shards' reports.
func Merge(reports []ShardReport) Summary {
	var s Summary
	for _, r := range reports {
		s.Op = r.Op
		s.Results = append(s.Results, r.Stacks...)
	}
	sort.SliceStable(s.Results, func(i, j int) bool {
		a, b := s.Results[i], s.Results[j]
		if (a.Error != "") != (b.Error != "") {
			return a.Error != ""
		}
		return a.Stack < b.Stack
	})
	for _, r := range s.Results {
		s.Stacks++
		switch {
		case r.Error != "":
			s.Failed++
		case changed(r.Changes) > 0:
			s.Changed++
		default:
			s.Unchanged++
		}
	}
	return s
}

// changed counts the resources an operation changes (all but "same").
func changed(c map[string]int) int {
	n := 0
	for op, k := range c {
		if op != "same" {
			n += k
		}
	}
	return n
}

// FirstLine is an error's first line: what a summary shows of it.
func FirstLine(err string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(err), "\n")
	return line
}

// MaxMarkdown is what a summary's Markdown may hold: GitHub refuses a
// comment (and a step summary) over 65,536 characters, and a fleet's
// failures with their full errors can pass that.
const MaxMarkdown = 60000

// Markdown is the summary as a pull request comment: the totals on top,
// then each stack collapsed, a failure with its first error line. Within
// MaxMarkdown, every stack keeps its line and the details go while they
// fit (failures come first); past it, the rest are counted.
func (s Summary) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n**Fleet %s**: %d stacks, %d failed, %d with changes, %d unchanged.\n\n", Marker, s.Op, s.Stacks, s.Failed, s.Changed, s.Unchanged)
	if len(s.NotRun) > 0 {
		fmt.Fprintf(&b, "**%d stacks did not get the change** (a wave before theirs failed or was not approved): %s\n\n", len(s.NotRun), strings.Join(s.NotRun, ", "))
	}
	// the one-line entries of the stacks not yet written, reserved
	rest := 0
	heads := make([]string, len(s.Results))
	for i, r := range s.Results {
		heads[i] = headline(r)
		rest += len(listed(heads[i]))
	}
	for i, r := range s.Results {
		rest -= len(listed(heads[i]))
		full := collapsed(heads[i], details(r))
		switch {
		case b.Len()+len(full)+rest <= MaxMarkdown:
			b.WriteString(full)
		case b.Len()+len(listed(heads[i])) <= MaxMarkdown-200:
			b.WriteString(listed(heads[i]))
		default:
			fmt.Fprintf(&b, "\n… and %d more stacks: the run's fleet-report artifacts have every stack, its report and its log.\n", len(s.Results)-i)
			return b.String()
		}
	}
	return b.String()
}

// listed is one stack's entry when its details do not fit: they are in
// its log, with the run's artifacts.
func listed(head string) string { return "- " + head + "\n" }

func headline(r StackResult) string {
	head := fmt.Sprintf("%s: %s", r.Stack, ChangeLine(r.Changes))
	if r.Error != "" {
		head = fmt.Sprintf("%s: **failed**: %s", r.Stack, FirstLine(r.Error))
	}
	if c := r.MonthlyCost; c != nil && c.Before != c.After {
		head += fmt.Sprintf(", monthly cost %.0f → %.0f %s (%+.0f)", c.Before, c.After, c.Currency, c.After-c.Before)
	}
	return head
}

func details(r StackResult) string {
	var b strings.Builder
	if r.Error != "" {
		fmt.Fprintf(&b, "```\n%s\n```\n\n", strings.TrimSpace(r.Error))
	}
	for _, d := range r.Diff {
		fmt.Fprintf(&b, "- `%s`\n", d)
	}
	if len(r.Diff) > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%s in %.0f s\n", ChangeLine(r.Changes), r.Seconds)
	return b.String()
}

// collapsed is one stack's entry with its details.
func collapsed(head, body string) string {
	return fmt.Sprintf("<details><summary>%s</summary>\n\n%s</details>\n", head, body)
}

// ChangeLine is the changes as "2 create, 1 update", or "no changes".
func ChangeLine(c map[string]int) string {
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(c)) {
		if op != "same" && c[op] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[op], op))
		}
	}
	if len(parts) == 0 {
		return "no changes"
	}
	return strings.Join(parts, ", ")
}

// The operations a shard job runs on each of its stacks.
const (
	OpPreview = "preview"
	OpUp      = "up"
	// OpDrift compares each stack's state with what is really there
	// (refresh --preview-only); a stack that renders to files, which has
	// no cluster to read, compares its program with its state instead.
	OpDrift = "drift"
)

// Ops are the shard operations.
func Ops() []string { return []string{OpPreview, OpUp, OpDrift} }
