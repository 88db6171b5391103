// Package promtest evaluates the program's alerting rules and queries with
// Prometheus's own engine (promql and rules) over synthetic series written
// in promtool's notation.
package promtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/storage"

	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/internal/monitoring"
)

// Timeline is what Prometheus's rule engine made of one alerting rule,
// minute by minute from 0.
type Timeline struct {
	Firing  []bool   // per minute: some alert of the rule is firing
	Summary []string // the summary of a firing alert, per minute
	// Labels are the labels of a firing alert, per minute (nil when none).
	Labels []map[string]string
}

// FirstFiring is the first minute the rule fires, or -1.
func (tl Timeline) FirstFiring() int {
	for m, f := range tl.Firing {
		if f {
			return m
		}
	}
	return -1
}

// Engine is a PromQL engine as Prometheus runs it by default (5 minutes
// of lookback).
func Engine() *promql.Engine {
	return promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
}

// Storage holds series in promtool's notation ("load 1m" is added).
func Storage(t *testing.T, series string) storage.Queryable {
	t.Helper()
	loaded := promqltest.LoadedStorage(t, "load 1m\n"+series)
	t.Cleanup(func() { _ = loaded.Close() })
	return loaded
}

// EvalRule evaluates one alerting rule, as Prometheus would every minute,
// over the series. An annotation template that fails to expand fails the
// test.
func EvalRule(t *testing.T, r monitoring.Rule, series string, minutes int) Timeline {
	t.Helper()
	store := Storage(t, series)
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
	if err != nil {
		t.Fatalf("%s: %v", r.Alert, err)
	}
	var hold time.Duration
	if r.For != "" {
		d, err := model.ParseDuration(r.For)
		if err != nil {
			t.Fatalf("%s: for %q: %v", r.Alert, r.For, err)
		}
		hold = time.Duration(d)
	}
	rule := rules.NewAlertingRule(r.Alert, expr, hold, 0, labels.FromMap(r.Labels), labels.FromMap(r.Annotations),
		labels.EmptyLabels(), "", true, promslog.NewNopLogger())
	query := rules.EngineQueryFunc(Engine(), store)
	var tl Timeline
	for m := 0; m <= minutes; m++ {
		ts := time.Unix(0, 0).UTC().Add(time.Duration(m) * time.Minute)
		if _, err := rule.Eval(context.Background(), 0, ts, query, nil, 0); err != nil {
			t.Fatalf("%s at minute %d: %v", r.Alert, m, err)
		}
		firing, summary := false, ""
		var firingLabels map[string]string
		for _, a := range rule.ActiveAlerts() {
			if a.State == rules.StateFiring {
				firing = true
				summary = a.Annotations.Get("summary")
				firingLabels = a.Labels.Map()
			}
			a.Annotations.Range(func(l labels.Label) {
				if strings.Contains(l.Value, "error expanding") {
					t.Errorf("%s: annotation %s: %s", r.Alert, l.Name, l.Value)
				}
			})
		}
		tl.Firing = append(tl.Firing, firing)
		tl.Summary = append(tl.Summary, summary)
		tl.Labels = append(tl.Labels, firingLabels)
	}
	return tl
}

// Instant is the value of a query that returns one series at the given
// minute; it fails the test for anything else.
func Instant(t *testing.T, store storage.Queryable, query string, minute int) float64 {
	t.Helper()
	q, err := Engine().NewInstantQuery(context.Background(), store, nil, query, time.Unix(int64(minute)*60, 0))
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	vec, err := q.Exec(context.Background()).Vector()
	if err != nil || len(vec) != 1 {
		t.Fatalf("%s: %v (%v), want one series", query, vec, err)
	}
	return vec[0].F
}

// ParseRules loads a PrometheusRule object's groups as Prometheus loads a
// rule file (rulefmt: expressions, durations, label names, annotation
// templates), strictly, and returns how many rules it holds.
func ParseRules(t *testing.T, obj map[string]any) int {
	t.Helper()
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		t.Fatalf("not a PrometheusRule: %v", obj)
	}
	content, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(content, false, model.UTF8Validation, parser.NewParser(parser.Options{}), promslog.NewNopLogger())
	if len(errs) > 0 {
		t.Fatalf("Prometheus refuses the rules: %v", errs)
	}
	n := 0
	for _, g := range groups.Groups {
		n += len(g.Rules)
	}
	return n
}
