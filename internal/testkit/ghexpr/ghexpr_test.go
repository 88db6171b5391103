package ghexpr

import "testing"

// GitHub's rules, each as its documentation states it, on the needs
// context a job sees.
func TestJobRuns(t *testing.T) {
	t.Parallel()
	ok := Needs{"plan": {Result: "success", Outputs: map[string]string{"plan": `{"canary":{"count":2},"1":{"count":0}}`}}, "build": {Result: "success"}}
	failed := Needs{"plan": {Result: "success"}, "build": {Result: "failure"}}
	skipped := Needs{"plan": {Result: "success"}, "build": {Result: "skipped"}}
	for _, tc := range []struct {
		name  string
		cond  string
		needs Needs
		want  bool
	}{
		{"no condition is success()", "", ok, true},
		{"no condition after a failure", "", failed, false},
		{"a skipped need skips a job without a status check", "", skipped, false},
		{"a condition without a status check is success() && it", "true", failed, false},
		{"always() runs after a failure", "always()", failed, true},
		{"failure()", "failure()", failed, true},
		{"an object filter maps over the needs", "always() && contains(needs.*.result, 'failure')", failed, true},
		{"contains() ignores case", "always() && contains(needs.*.result, 'FAILURE')", failed, true},
		{"a skipped need is not a failure", "always() && !contains(needs.*.result, 'failure')", skipped, true},
		{"== on strings ignores case", "needs.plan.result == 'Success'", ok, true},
		{"fromJSON and a property", "fromJSON(needs.plan.outputs.plan).canary.count > 0", ok, true},
		{"an index by string", "fromJSON(needs.plan.outputs.plan)['1'].count > 0", ok, false},
		{"a missing property is null, 0 in a comparison", "fromJSON(needs.plan.outputs.plan)['2'].count > 0", ok, false},
		{"== coerces to numbers", "fromJSON(needs.plan.outputs.plan).canary.count == '2'", ok, true},
		{"|| yields the truthy operand", "'' || 'x'", ok, true},
		{"! of an empty string", "!''", ok, true},
		{"${{ }} around a condition", "${{ always() }}", failed, true},
	} {
		got, err := JobRuns(tc.cond, tc.needs)
		if err != nil || got != tc.want {
			t.Errorf("%s: JobRuns(%q) = %v, %v; want %v", tc.name, tc.cond, got, err, tc.want)
		}
	}
	for _, bad := range []string{"always(", "github.ref == 'x'", "format('{0}', 1)"} {
		if _, err := JobRuns(bad, ok); err == nil {
			t.Errorf("JobRuns(%q): no error for what it cannot evaluate", bad)
		}
	}
}
