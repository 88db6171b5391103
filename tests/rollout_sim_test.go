package tests

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/internal/testkit/ghexpr"
	"github.com/natron/gpu-node-pools/stacks/fleet"
)

// rollout is what GitHub runs of up.yml's jobs when the plan holds
// members and each job that runs ends as outcome says (success when
// unsaid): every job's if: evaluated as GitHub evaluates it, in the order
// of its needs. A job that does not run is skipped.
func rollout(t *testing.T, w workflow, members []fleet.Member, outcome map[string]string) map[string]string {
	t.Helper()
	plan, err := json.Marshal(fleet.InWaves(members, 20))
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]string{}
	var visit func(name string)
	visit = func(name string) {
		if _, done := results[name]; done {
			return
		}
		j := w.Jobs[name]
		needs := ghexpr.Needs{}
		for _, n := range needsOf(j.Needs) {
			visit(n)
			needs[n] = ghexpr.Need{Result: results[n], Outputs: map[string]string{"plan": string(plan)}}
		}
		runs, err := ghexpr.JobRuns(j.If, needs)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		results[name] = "skipped"
		if runs {
			results[name] = cmpOr(outcome[name], "success")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(w.Jobs)) {
		visit(name)
	}
	return results
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// The rollout as GitHub would run it: each wave goes out only after every
// earlier wave succeeded, a failed or cancelled wave stops every later
// one, an empty wave is skipped without stopping the next, and the report
// runs whatever happened to the waves (not when the plan failed). The
// conditions are evaluated, not read: a wave whose if: lost its failure
// check is caught here.
func TestRolloutRunsAsGitHubWould(t *testing.T) {
	t.Parallel()
	w, text := readWorkflow(t, "up.yml")
	all := []fleet.Member{{Stack: "canary-a", Wave: fleet.Canary}, {Stack: "b", Wave: "1"}, {Stack: "c", Wave: "1"}, {Stack: "d", Wave: "2"}, {Stack: "e", Wave: "3"}}
	without := func(wave string) []fleet.Member {
		return slices.DeleteFunc(slices.Clone(all), func(m fleet.Member) bool { return m.Wave == wave })
	}
	type want map[string]string
	cases := []struct {
		name    string
		members []fleet.Member
		outcome map[string]string
		want    want
	}{
		{"every wave succeeds", all, nil,
			want{"canary": "success", "wave-1": "success", "wave-2": "success", "wave-3": "success", "report": "success"}},
		{"the canary fails", all, map[string]string{"canary": "failure"},
			want{"canary": "failure", "wave-1": "skipped", "wave-2": "skipped", "wave-3": "skipped", "report": "success"}},
		{"wave 1 fails", all, map[string]string{"wave-1": "failure"},
			want{"canary": "success", "wave-1": "failure", "wave-2": "skipped", "wave-3": "skipped", "report": "success"}},
		{"wave 2 is cancelled", all, map[string]string{"wave-2": "cancelled"},
			want{"wave-1": "success", "wave-2": "cancelled", "wave-3": "skipped", "report": "success"}},
		{"no canary stacks", without(fleet.Canary), nil,
			want{"canary": "skipped", "wave-1": "success", "wave-2": "success", "wave-3": "success"}},
		{"an empty wave 2", without("2"), nil,
			want{"wave-1": "success", "wave-2": "skipped", "wave-3": "success"}},
		{"an empty wave 2 after a failed wave 1", without("2"), map[string]string{"wave-1": "failure"},
			want{"wave-2": "skipped", "wave-3": "skipped"}},
		{"the plan fails", all, map[string]string{"plan": "failure"},
			want{"canary": "skipped", "wave-1": "skipped", "wave-2": "skipped", "wave-3": "skipped", "report": "skipped"}},
	}
	for _, tc := range cases {
		got := rollout(t, w, tc.members, tc.outcome)
		for job, r := range tc.want {
			if got[job] != r {
				t.Errorf("%s: %s %s, want %s (all: %v)", tc.name, job, got[job], r, got)
			}
		}
	}

	// The simulation can tell: wave 2 without its failure check runs
	// after a failed wave 1.
	broken := strings.Replace(text, "needs: [plan, canary, wave-1]\n    if: always() && needs.plan.result == 'success' && !contains(needs.*.result, 'failure') &&",
		"needs: [plan, canary, wave-1]\n    if: always() && needs.plan.result == 'success' &&", 1)
	if broken == text {
		t.Fatal("up.yml's wave-2 condition is not where this test looks for it")
	}
	var bw workflow
	if err := yaml.Unmarshal([]byte(broken), &bw); err != nil {
		t.Fatal(err)
	}
	if got := rollout(t, bw, all, map[string]string{"wave-1": "failure"}); got["wave-2"] != "success" {
		t.Errorf("without its failure check wave 2 should run after a failed wave 1 in the simulation: %v", got)
	}
}
