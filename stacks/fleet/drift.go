package fleet

import (
	"fmt"
	"strings"
)

// Issue is what the drift workflow does with one stack's issue: open (or
// update) it for a stack that drifted, close it for a clean one. A stack
// whose check failed gets none: the run fails and says why.
type Issue struct {
	Stack string `json:"stack"`
	Title string `json:"title"`
	// State is "open" or "closed".
	State string `json:"state"`
	Body  string `json:"body,omitempty"`
}

// DriftTitle is the title of a stack's drift issue, by which the workflow
// finds it again.
func DriftTitle(stack string) string { return "Drift: stack " + stack }

// DriftIssues are the issue actions of a drift run's summary.
func DriftIssues(s Summary) []Issue {
	var out []Issue
	for _, r := range s.Results {
		switch {
		case r.Error != "":
			continue
		case changed(r.Changes) == 0:
			out = append(out, Issue{Stack: r.Stack, Title: DriftTitle(r.Stack), State: "closed"})
		default:
			var b strings.Builder
			fmt.Fprintf(&b, "Stack `%s` differs from its state: %s.\n\n", r.Stack, ChangeLine(r.Changes))
			for _, d := range r.Diff {
				fmt.Fprintf(&b, "- `%s`\n", d)
			}
			b.WriteString("\nRun `pulumi up` for the stack to put back what its program says (the up workflow does on the next merge), " +
				"or change the program to adopt what is there. The next clean drift run closes this issue.\n")
			out = append(out, Issue{Stack: r.Stack, Title: DriftTitle(r.Stack), State: "open", Body: b.String()})
		}
	}
	return out
}
