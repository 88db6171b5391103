package fleet

import (
	"fmt"
	"strings"
	"testing"
)

// The shards' reports merge into one summary: totals that count every
// stack once, failures first with their first error line, each stack
// collapsed under the totals, the cost change where there is one, and the
// marker the workflow finds its comment by.
func TestMergeAndMarkdown(t *testing.T) {
	t.Parallel()
	reports := []ShardReport{
		{Op: "preview", Shard: 1, Stacks: []StackResult{
			{Stack: "globex", Changes: map[string]int{"same": 40}, Seconds: 21},
			{Stack: "acme", Changes: map[string]int{"update": 2, "create": 1, "same": 37}, Seconds: 25,
				MonthlyCost: &CostChange{Before: 71774, After: 143547, Currency: "USD"}},
		}},
		{Op: "preview", Shard: 2, Stacks: []StackResult{
			{Stack: "initech", Error: "stack initech: preview: gpu-node-pools:pools[0].maxNodes: must be >= minNodes (3), got 1\ndetails follow", Seconds: 2},
			{Stack: "umbrella", Changes: map[string]int{}, Seconds: 19, MonthlyCost: &CostChange{Before: 100, After: 100, Currency: "USD"}},
		}},
	}
	s := Merge(reports)
	if s.Stacks != 4 || s.Failed != 1 || s.Changed != 1 || s.Unchanged != 2 || s.Op != "preview" {
		t.Errorf("totals %+v", s)
	}
	var order []string
	for _, r := range s.Results {
		order = append(order, r.Stack)
	}
	if strings.Join(order, " ") != "initech acme globex umbrella" {
		t.Errorf("order %v: failures first, then by name", order)
	}
	md := s.Markdown()
	for _, want := range []string{
		Marker + "\n**Fleet preview**: 4 stacks, 1 failed, 1 with changes, 2 unchanged.",
		"<details><summary>initech: **failed**: stack initech: preview: gpu-node-pools:pools[0].maxNodes: must be >= minNodes (3), got 1</summary>",
		"<details><summary>acme: 1 create, 2 update, monthly cost 71774 → 143547 USD (+71773)</summary>",
		"<details><summary>globex: no changes</summary>",
		"<details><summary>umbrella: no changes</summary>",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in:\n%s", want, md)
		}
	}
	if strings.Count(md, "<details>") != 4 || strings.Index(md, "initech") > strings.Index(md, "acme") {
		t.Errorf("want four stacks, failures first:\n%s", md)
	}
}

// A rollout's summary names the stacks it planned that no shard reported:
// they did not get the change.
func TestNotRun(t *testing.T) {
	t.Parallel()
	s := Merge([]ShardReport{{Op: "up", Wave: "canary", Stacks: []StackResult{{Stack: "acme", Error: "boom"}}}})
	planned := InWaves([]Member{{"acme", "canary"}, {"globex", "1"}, {"initech", "3"}, {"umbrella", "3"}}, 1)
	var all []string
	for _, w := range Waves() {
		all = append(all, planned[w].Matrix.Stacks()...)
	}
	s.Planned(all)
	if strings.Join(s.NotRun, " ") != "globex initech umbrella" {
		t.Errorf("not run: %v", s.NotRun)
	}
	if md := s.Markdown(); !strings.Contains(md, "**3 stacks did not get the change** (a wave before theirs failed or was not approved): globex, initech, umbrella") {
		t.Errorf("markdown:\n%s", md)
	}
}

// A drift run opens (or updates) an issue for each stack that drifted,
// with what differs, closes the issue of each clean stack, and leaves the
// issue of a stack whose check failed alone.
func TestDriftIssues(t *testing.T) {
	t.Parallel()
	s := Merge([]ShardReport{{Op: OpDrift, Stacks: []StackResult{
		{Stack: "acme", Changes: map[string]int{"update": 1, "same": 40}, Diff: []string{"update kubernetes:apps/v1:Deployment models-llama3-8b (spec)"}},
		{Stack: "globex", Changes: map[string]int{"same": 40}},
		{Stack: "initech", Error: "stack initech: no passphrase"},
	}}})
	got := DriftIssues(s)
	if len(got) != 2 || got[0].Stack != "acme" || got[0].State != "open" || got[1].Stack != "globex" || got[1].State != "closed" {
		t.Fatalf("issues %+v", got)
	}
	if got[0].Title != "Drift: stack acme" || !strings.Contains(got[0].Body, "- `update kubernetes:apps/v1:Deployment models-llama3-8b (spec)`") ||
		!strings.Contains(got[0].Body, "1 update") {
		t.Errorf("acme's issue: %+v", got[0])
	}
}

// A fleet whose every stack failed with a long error still fits in one
// comment (GitHub refuses one over 65,536 characters): the failures keep
// their details while those fit, then their lines, and past that the rest
// are counted, never cut mid-entry.
func TestMarkdownFitsAComment(t *testing.T) {
	t.Parallel()
	failed := func(n int) []StackResult {
		var out []StackResult
		for i := range n {
			out = append(out, StackResult{
				Stack: fmt.Sprintf("customer%03d", i),
				Error: fmt.Sprintf("stack customer%03d: up: boom\n%s", i, strings.Repeat("a long provider error line\n", 40)),
				Diff:  []string{"update kubernetes:apps/v1:Deployment vllm (spec)"},
			})
		}
		return out
	}
	for _, tc := range []struct {
		stacks                     int
		details, lines, more, tail bool
	}{
		{stacks: 3, details: true},
		{stacks: 100, details: true, lines: true},
		{stacks: 2000, lines: true, more: true},
	} {
		md := Merge([]ShardReport{{Op: OpUp, Stacks: failed(tc.stacks)}}).Markdown()
		if len(md) > MaxMarkdown {
			t.Errorf("%d stacks: %d characters, want at most %d", tc.stacks, len(md), MaxMarkdown)
		}
		shown := strings.Count(md, "<details>") + strings.Count(md, "\n- customer")
		var more int
		if i := strings.Index(md, "… and "); i >= 0 {
			fmt.Sscanf(md[i:], "… and %d more stacks", &more)
		}
		if shown+more != tc.stacks || (more > 0) != tc.more {
			t.Errorf("%d stacks: %d shown and %d counted", tc.stacks, shown, more)
		}
		if got := strings.Contains(md, "a long provider error line"); got != tc.details {
			t.Errorf("%d stacks: details shown %v, want %v", tc.stacks, got, tc.details)
		}
		if got := strings.Contains(md, "\n- customer"); got != tc.lines {
			t.Errorf("%d stacks: one-line entries %v, want %v", tc.stacks, got, tc.lines)
		}
		if !strings.Contains(md, "customer000: **failed**: stack customer000: up: boom") {
			t.Errorf("%d stacks: the first failure is not named", tc.stacks)
		}
	}
}
