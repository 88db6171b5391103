package preflight

import (
	"fmt"
	"sort"

	"github.com/natron/gpu-node-pools/stacks/plan"
)

// CostChange is the monthly cost of a stack against its base (the pull
// request's target branch), pool by pool, as a Markdown table: at
// maxNodes and expected (the nodes the models' minReplicas keep up). base
// is nil for a stack the base does not have; a pool without a price on
// record shows its note.
func CostChange(base, head *plan.Stack) []string {
	type row struct{ baseMax, headMax, baseExp, headExp, cur, note string }
	rows := map[string]*row{}
	var names []string
	add := func(p *plan.Stack, isBase bool) {
		if p == nil {
			return
		}
		for _, f := range p.Facts() {
			r := rows[f.Name]
			if r == nil {
				r = &row{baseMax: "-", headMax: "-", baseExp: "-", headExp: "-"}
				rows[f.Name] = r
				names = append(names, f.Name)
			}
			c := p.Costs[f.Name]
			if c.Cost == nil {
				if !isBase {
					r.note = c.Note
				}
				continue
			}
			mx, ex := money(c.Cost.AtMax), money(c.Cost.Expected)
			r.cur = c.Cost.Currency
			if isBase {
				r.baseMax, r.baseExp = mx, ex
			} else {
				r.headMax, r.headExp = mx, ex
			}
		}
	}
	add(base, true)
	add(head, false)
	sort.Strings(names)
	out := []string{
		"| pool | at maxNodes, base → this change | expected, base → this change | currency | note |",
		"|---|---|---|---|---|",
	}
	for _, n := range names {
		r := rows[n]
		out = append(out, fmt.Sprintf("| %s | %s → %s | %s → %s | %s | %s |", n, r.baseMax, r.headMax, r.baseExp, r.headExp, r.cur, r.note))
	}
	bMax, bExp := totals(base)
	hMax, hExp := totals(head)
	out = append(out, fmt.Sprintf("| **total** | %s → %s (%s) | %s → %s (%s) | | |",
		money(bMax), money(hMax), delta(hMax-bMax), money(bExp), money(hExp), delta(hExp-bExp)))
	return out
}

// totals sums the priced pools over currencies (one per stack in
// practice; the table names it per pool).
func totals(p *plan.Stack) (atMax, expected float64) {
	if p == nil {
		return 0, 0
	}
	byCurrency, _ := p.CostTotals()
	for _, t := range byCurrency {
		atMax += t.AtMax
		expected += t.Expected
	}
	return atMax, expected
}

func money(v float64) string { return fmt.Sprintf("%.0f", v) }

func delta(v float64) string {
	if v >= 0 {
		return fmt.Sprintf("+%.0f", v)
	}
	return fmt.Sprintf("%.0f", v)
}
