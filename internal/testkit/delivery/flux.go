package delivery

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Kustomization is what a Flux Kustomization tells kustomize-controller.
type Kustomization struct {
	Name      string
	Path      string
	DependsOn []string
	Wait      bool
	Force     bool
	Prune     bool
	Timeout   time.Duration
}

// Kustomizations reads the Flux Kustomizations among objs, each after
// those it depends on (kustomize-controller applies a Kustomization only
// once every dependsOn is Ready: docs/spec/v1/kustomizations.md).
func Kustomizations(objs []*unstructured.Unstructured) ([]Kustomization, error) {
	byName := map[string]Kustomization{}
	var names []string
	for _, o := range objs {
		if o.GetKind() != "Kustomization" || o.GroupVersionKind().Group != "kustomize.toolkit.fluxcd.io" {
			continue
		}
		k := Kustomization{Name: o.GetName(), Timeout: 5 * time.Minute}
		k.Path, _, _ = unstructured.NestedString(o.Object, "spec", "path")
		k.Wait, _, _ = unstructured.NestedBool(o.Object, "spec", "wait")
		k.Force, _, _ = unstructured.NestedBool(o.Object, "spec", "force")
		k.Prune, _, _ = unstructured.NestedBool(o.Object, "spec", "prune")
		if s, ok, _ := unstructured.NestedString(o.Object, "spec", "timeout"); ok {
			d, err := time.ParseDuration(s)
			if err != nil {
				return nil, fmt.Errorf("Kustomization %s: timeout %q: %w", k.Name, s, err)
			}
			k.Timeout = d
		}
		deps, _, _ := unstructured.NestedSlice(o.Object, "spec", "dependsOn")
		for _, d := range deps {
			m, _ := d.(map[string]any)
			n, _ := m["name"].(string)
			k.DependsOn = append(k.DependsOn, n)
		}
		byName[k.Name] = k
		names = append(names, k.Name)
	}
	slices.Sort(names)
	var out []Kustomization
	done := map[string]bool{}
	for len(out) < len(names) {
		progressed := false
		for _, n := range names {
			k := byName[n]
			if done[n] || slices.ContainsFunc(k.DependsOn, func(d string) bool { return !done[d] }) {
				continue
			}
			for _, d := range k.DependsOn {
				if _, ok := byName[d]; !ok {
					return nil, fmt.Errorf("Kustomization %s depends on %s, which is not there", n, d)
				}
			}
			out, done[n], progressed = append(out, k), true, true
		}
		if !progressed {
			return nil, fmt.Errorf("Kustomizations depend on each other in a cycle")
		}
	}
	return out, nil
}

// Flux reconciles the Kustomizations in order as kustomize-controller
// does: build the path, apply it in stages with server-side apply
// (ResourceManager.ApplyAllStaged: CRDs and Namespaces first, waited for),
// then, with wait, wait until every applied object is Current by kstatus
// (ResourceManager.WaitForSetWithContext, failing fast on a Failed one) for
// the Kustomization's timeout. A Kustomization whose dependency is not
// Ready is not applied.
func (c *Cluster) Flux(ctx context.Context, repo Repo, ks []Kustomization) []Step {
	var steps []Step
	ready := map[string]bool{}
	for _, k := range ks {
		start := time.Now()
		step := Step{Name: "Kustomization " + k.Name}
		if i := slices.IndexFunc(k.DependsOn, func(d string) bool { return !ready[d] }); i >= 0 {
			step.Err = fmt.Errorf("dependency %s is not ready: not applied", k.DependsOn[i])
			steps = append(steps, c.done(step))
			continue
		}
		step.Applied, step.Err = c.reconcile(ctx, repo, k)
		step.Took = time.Since(start)
		ready[k.Name] = step.Err == nil
		steps = append(steps, c.done(step))
	}
	return steps
}

func (c *Cluster) reconcile(ctx context.Context, repo Repo, k Kustomization) (int, error) {
	dir, err := repo.Local(k.Path)
	if err != nil {
		return 0, err
	}
	objs, err := Build(dir)
	if err != nil {
		return 0, err
	}
	opts := ssa.DefaultApplyOptions()
	opts.Force = k.Force
	timeout := k.Timeout
	if c.Limit > 0 {
		timeout = min(timeout, c.Limit)
	}
	opts.WaitTimeout = timeout
	cs, err := c.Manager.ApplyAllStaged(ctx, objs, opts)
	if err != nil {
		return len(cs.Entries), fmt.Errorf("apply: %w", err)
	}
	// Garbage collection of what left the tree comes after the apply and
	// before the health check (kustomize-controller's reconcile: apply,
	// prune, checkHealth).
	if stale := c.stale("Kustomization "+k.Name, objs); k.Prune && len(stale) > 0 {
		if _, err := c.Manager.DeleteAll(ctx, stale, ssa.DefaultDeleteOptions()); err != nil {
			return len(cs.Entries), fmt.Errorf("prune: %w", err)
		}
	}
	if !k.Wait {
		return len(cs.Entries), nil
	}
	err = c.Manager.WaitForSetWithContext(ctx, cs.ToObjMetadataSet(), ssa.WaitOptions{Interval: time.Second, Timeout: timeout, FailFast: true})
	if err != nil {
		return len(cs.Entries), fmt.Errorf("health check: %w%s", err, c.waitingNote())
	}
	return len(cs.Entries), nil
}

// waitingNote says which pods the kubelet would not start, and why.
func (c *Cluster) waitingNote() string {
	w := c.Srv.Waiting()
	if len(w) == 0 {
		return ""
	}
	s := "\npods not started for want of their inputs:"
	for _, p := range slices.Sorted(maps.Keys(w)) {
		s += fmt.Sprintf("\n  %s: %v", p, w[p])
	}
	return s
}
