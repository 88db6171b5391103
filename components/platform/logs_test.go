package platform_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/natron/gpu-node-pools/components/logging"
	"github.com/natron/gpu-node-pools/components/platform"
)

var (
	selectorLabel = regexp.MustCompile(`(\w+)\s*=~?\s*"`)
	fieldLabel    = regexp.MustCompile(`\$\{__field\.labels\.(\w+)\}`)
	targetLabel   = regexp.MustCompile(`target_label\s*=\s*"(\w+)"`)
)

// Each panel's "Logs in Loki" link finds logs: its selector uses only the
// labels the log collector puts on every stream (logging.Config's
// target_label rules), and fills them only from labels the panel's series
// carry (the grouping of its PromQL, as Prometheus's parser reads it). The
// GPU panels link by node, the serving panels by model.
func TestPanelsLinkToTheirLogs(t *testing.T) {
	t.Parallel()
	var streamLabels []string
	for _, m := range targetLabel.FindAllStringSubmatch(logging.Config("http://loki"), -1) {
		streamLabels = append(streamLabels, m[1])
	}
	if len(streamLabels) < 4 {
		t.Fatalf("the collector sets labels %v", streamLabels)
	}
	links := map[string]int{}
	for _, d := range platform.Dashboards() {
		var model struct {
			Templating struct{ List []map[string]any } `json:"templating"`
			Panels     []struct {
				Title       string `json:"title"`
				FieldConfig struct {
					Defaults struct {
						Links []struct{ Title, URL string } `json:"links"`
					} `json:"defaults"`
				} `json:"fieldConfig"`
				Targets []struct{ Expr string } `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal([]byte(d.JSON()), &model); err != nil {
			t.Fatal(err)
		}
		if v := model.Templating.List[1]; v["name"] != "loki" || v["query"] != "loki" {
			t.Errorf("%s: no Loki datasource variable: %v", d.UID, model.Templating.List)
		}
		for _, p := range model.Panels {
			for _, l := range p.FieldConfig.Defaults.Links {
				links[d.UID]++
				_, pane, _ := strings.Cut(l.URL, "panes=")
				var panes map[string]struct {
					Queries []struct{ Expr string } `json:"queries"`
				}
				if err := json.Unmarshal([]byte(pane), &panes); err != nil || len(panes["logs"].Queries) != 1 {
					t.Errorf("%s/%s: link %q: %v", d.UID, p.Title, l.URL, err)
					continue
				}
				sel := panes["logs"].Queries[0].Expr
				for _, m := range selectorLabel.FindAllStringSubmatch(sel, -1) {
					if !slices.Contains(streamLabels, m[1]) {
						t.Errorf("%s/%s: selects on %q, which no stream carries (%v)", d.UID, p.Title, m[1], streamLabels)
					}
				}
				for _, m := range fieldLabel.FindAllStringSubmatch(sel, -1) {
					for _, tg := range p.Targets {
						if by := grouping(t, tg.Expr); !slices.Contains(by, m[1]) {
							t.Errorf("%s/%s: the link reads label %q, its series have only %v", d.UID, p.Title, m[1], by)
						}
					}
				}
			}
		}
	}
	if links["gnp-gpu-fleet"] < 3 || links["gnp-model-serving"] < 3 {
		t.Errorf("log links per dashboard: %v", links)
	}
}

// grouping is the labels of an expression's result: its outermost
// aggregation's by clause.
func grouping(t *testing.T, expr string) []string {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatal(err)
	}
	var by []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if a, ok := n.(*parser.AggregateExpr); ok && by == nil && !a.Without {
			by = a.Grouping
		}
		return nil
	})
	return by
}
