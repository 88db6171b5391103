// Package ghexpr evaluates a GitHub Actions job's if: condition as GitHub
// would, so that a test can ask which jobs of a workflow run when an
// earlier one fails, is cancelled or is skipped. Expressions are parsed
// by actionlint's parser (github.com/rhysd/actionlint, expr_parser.go);
// the evaluation follows GitHub's documented rules (docs.github.com, "Evaluate
// expressions in workflows and actions"): && and || yield an operand,
// false, 0, "" and null are falsy, == compares strings ignoring case and
// other types as numbers, contains() searches an array or a string
// ignoring case, object filters (needs.*.result) map over an object's
// values, and a job condition with no status check function is
// success() && (condition).
package ghexpr

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rhysd/actionlint"
)

// Needs are the results of the jobs a job needs (success, failure,
// cancelled, skipped) and their outputs.
type Needs map[string]Need

// Need is one needed job as the needs context holds it.
type Need struct {
	Result  string
	Outputs map[string]string
}

// JobRuns reports whether a job with condition cond runs after needs: the
// condition is evaluated with the needs context, success() true when every
// needed job succeeded, failure() when one failed, always() always and
// cancelled() never (the run is not cancelled).
func JobRuns(cond string, needs Needs) (bool, error) {
	cond = strings.TrimSpace(cond)
	cond = strings.TrimSuffix(strings.TrimPrefix(cond, "${{"), "}}")
	if strings.TrimSpace(cond) == "" {
		cond = "success()"
	}
	node, perr := actionlint.NewExprParser().Parse(actionlint.NewExprLexer(cond + "}}"))
	if perr != nil {
		return false, fmt.Errorf("%q: %s", cond, perr.Message)
	}
	e := &evaluator{needs: needs}
	v, err := e.eval(node)
	if err != nil {
		return false, fmt.Errorf("%q: %w", cond, err)
	}
	if !hasStatusCheck(node) {
		return e.success() && truthy(v), nil
	}
	return truthy(v), nil
}

var statusChecks = []string{"success", "failure", "always", "cancelled"}

func hasStatusCheck(n actionlint.ExprNode) bool {
	found := false
	actionlint.VisitExprNode(n, func(n, _ actionlint.ExprNode, entering bool) {
		if f, ok := n.(*actionlint.FuncCallNode); ok && entering && slices.Contains(statusChecks, strings.ToLower(f.Callee)) {
			found = true
		}
	})
	return found
}

type evaluator struct{ needs Needs }

// filtered is what an object filter (x.*) yields: property access maps
// over it.
type filtered []any

func (e *evaluator) success() bool {
	for _, n := range e.needs {
		if n.Result != "success" {
			return false
		}
	}
	return true
}

func (e *evaluator) context() map[string]any {
	out := map[string]any{}
	for name, n := range e.needs {
		outputs := map[string]any{}
		for k, v := range n.Outputs {
			outputs[k] = v
		}
		out[name] = map[string]any{"result": n.Result, "outputs": outputs}
	}
	return out
}

func (e *evaluator) eval(n actionlint.ExprNode) (any, error) {
	switch n := n.(type) {
	case *actionlint.NullNode:
		return nil, nil
	case *actionlint.BoolNode:
		return n.Value, nil
	case *actionlint.IntNode:
		return float64(n.Value), nil
	case *actionlint.FloatNode:
		return n.Value, nil
	case *actionlint.StringNode:
		return n.Value, nil
	case *actionlint.VariableNode:
		if strings.EqualFold(n.Name, "needs") {
			return e.context(), nil
		}
		return nil, fmt.Errorf("context %s is not simulated", n.Name)
	case *actionlint.ObjectDerefNode:
		recv, err := e.eval(n.Receiver)
		if err != nil {
			return nil, err
		}
		return property(recv, n.Property), nil
	case *actionlint.ArrayDerefNode:
		recv, err := e.eval(n.Receiver)
		if err != nil {
			return nil, err
		}
		switch r := recv.(type) {
		case map[string]any:
			keys := slices.Sorted(maps.Keys(r))
			out := make(filtered, len(keys))
			for i, k := range keys {
				out[i] = r[k]
			}
			return out, nil
		case []any:
			return filtered(r), nil
		}
		return filtered{}, nil
	case *actionlint.IndexAccessNode:
		recv, idx, err := e.both(n.Operand, n.Index)
		if err != nil {
			return nil, err
		}
		switch i := idx.(type) {
		case string:
			return property(recv, i), nil
		case float64:
			if a, ok := recv.([]any); ok && i >= 0 && int(i) < len(a) {
				return a[int(i)], nil
			}
		}
		return nil, nil
	case *actionlint.NotOpNode:
		v, err := e.eval(n.Operand)
		return !truthy(v), err
	case *actionlint.LogicalOpNode:
		l, err := e.eval(n.Left)
		if err != nil {
			return nil, err
		}
		if (n.Kind == actionlint.LogicalOpNodeKindAnd) != truthy(l) {
			return l, nil // && stops at a falsy left, || at a truthy one
		}
		return e.eval(n.Right)
	case *actionlint.CompareOpNode:
		l, r, err := e.both(n.Left, n.Right)
		if err != nil {
			return nil, err
		}
		return compare(n.Kind, l, r), nil
	case *actionlint.FuncCallNode:
		return e.call(n)
	}
	return nil, fmt.Errorf("expression %T is not simulated", n)
}

// both evaluates an index's or a comparison's two operands, left first.
func (e *evaluator) both(a, b actionlint.ExprNode) (any, any, error) {
	x, err := e.eval(a)
	if err != nil {
		return nil, nil, err
	}
	y, err := e.eval(b)
	return x, y, err
}

func (e *evaluator) call(n *actionlint.FuncCallNode) (any, error) {
	args := make([]any, len(n.Args))
	for i, a := range n.Args {
		v, err := e.eval(a)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	switch f := strings.ToLower(n.Callee); {
	case f == "always" && len(args) == 0:
		return true, nil
	case f == "success" && len(args) == 0:
		return e.success(), nil
	case f == "failure" && len(args) == 0:
		for _, n := range e.needs {
			if n.Result == "failure" {
				return true, nil
			}
		}
		return false, nil
	case f == "cancelled" && len(args) == 0:
		return false, nil
	case f == "contains" && len(args) == 2:
		return contains(args[0], args[1]), nil
	case f == "fromjson" && len(args) == 1:
		s, _ := args[0].(string)
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, fmt.Errorf("fromJSON: %w", err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("function %s with %d arguments is not simulated", n.Callee, len(args))
}

// property is an object's property, matched ignoring case as GitHub's
// contexts are; on a filter, each element's.
func property(recv any, name string) any {
	switch r := recv.(type) {
	case map[string]any:
		for k, v := range r {
			if strings.EqualFold(k, name) {
				return v
			}
		}
	case filtered:
		out := make(filtered, 0, len(r))
		for _, el := range r {
			out = append(out, property(el, name))
		}
		return out
	}
	return nil
}

func contains(search, item any) bool {
	switch s := search.(type) {
	case filtered:
		return slices.ContainsFunc(s, func(el any) bool { return equal(el, item) })
	case []any:
		return slices.ContainsFunc(s, func(el any) bool { return equal(el, item) })
	}
	return strings.Contains(strings.ToLower(str(search)), strings.ToLower(str(item)))
}

func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case float64:
		return v != 0 && !math.IsNaN(v)
	case string:
		return v != ""
	}
	return true
}

func equal(a, b any) bool {
	as, aok := a.(string)
	bs, bok := b.(string)
	if aok && bok {
		return strings.EqualFold(as, bs)
	}
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return number(a) == number(b)
}

func compare(k actionlint.CompareOpNodeKind, a, b any) bool {
	switch k {
	case actionlint.CompareOpNodeKindEq:
		return equal(a, b)
	case actionlint.CompareOpNodeKindNotEq:
		return !equal(a, b)
	}
	x, y := number(a), number(b)
	switch k {
	case actionlint.CompareOpNodeKindLess:
		return x < y
	case actionlint.CompareOpNodeKindLessEq:
		return x <= y
	case actionlint.CompareOpNodeKindGreater:
		return x > y
	case actionlint.CompareOpNodeKindGreaterEq:
		return x >= y
	}
	return false
}

// number is GitHub's coercion to a number: null 0, booleans 0 and 1,
// strings parsed (NaN when not a number), objects and arrays NaN.
func number(v any) float64 {
	switch v := v.(type) {
	case nil:
		return 0
	case bool:
		if v {
			return 1
		}
		return 0
	case float64:
		return v
	case string:
		if strings.TrimSpace(v) == "" {
			return 0
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			return f
		}
	}
	return math.NaN()
}

func str(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
