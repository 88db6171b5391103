package tests

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// blocksScaleDown is the cluster autoscaler's rule for a pod annotated
// safe-to-evict "false": the node it runs on is never removed to
// consolidate (cluster-autoscaler 1.34
// simulator/drainability/rules/notsafetoevict/rule.go, Drainable, and
// utils/drain/drain.go, HasNotSafeToEvictAnnotation). The autoscaler does
// not run here.
func blocksScaleDown(p corev1.Pod) bool {
	return p.Annotations[serving.SafeToEvict] == "false"
}

// A serving model and the disruptions it meets, on the real API server
// with the real disruption controller: the host draining a node (an AKS
// node-image upgrade evicts through the same API) takes a model with two
// replicas down one replica at a time, its PodDisruptionBudget refusing
// the second eviction while the first is not replaced; a model's only
// replica can still be evicted, so the host's upgrades never stall on it;
// and the cluster autoscaler, which would move that only replica to pack
// nodes (an outage of a cold start), leaves its node alone.
func TestEngineDisruption(t *testing.T) {
	t.Parallel()
	cfg := stacktest.Config(t, "prod")
	const pair, single = "llama3-8b", "llama3-70b"
	for i := range cfg.Models {
		if cfg.Models[i].Name == pair {
			cfg.Models[i].MinReplicas = new(2)
		}
	}
	p, err := plan.Resolve(cfg, "prod")
	if err != nil {
		t.Fatal(err)
	}
	ns := p.Serving.Options.Namespace
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	replicas := map[string]int{}
	var budgets []map[string]any
	for _, e := range p.Serving.Engines {
		replicas[e.Name] = max(e.MinReplicas, 1)
		rel := serving.EngineRelease(helm.Source{}, e, serving.VLLMStackChart)
		for _, o := range rel.Apply(helmtest.RenderRelease(t, charts, rel, ns)) {
			if o["kind"] == "PodDisruptionBudget" {
				budgets = append(budgets, o)
			}
		}
	}
	if replicas[pair] != 2 || replicas[single] != 1 || len(budgets) != len(p.Serving.Engines) {
		t.Fatalf("replicas %v, %d budgets for %d models", replicas, len(budgets), len(p.Serving.Engines))
	}
	s := simulate(t, p, nil, 3*len(p.Serving.Engines)+len(p.Serving.Jobs))
	s.srv.Create(t, budgets...)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, err := kubernetes.NewForConfig(s.srv.Config(t))
	if err != nil {
		t.Fatal(err)
	}
	pods := func(model string) []corev1.Pod {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "model=" + model})
		if err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	// the disruption controller has counted each model's healthy replicas
	for _, b := range budgets {
		name := b["metadata"].(map[string]any)["name"].(string)
		for {
			pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil && pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.ExpectedPods > 0 &&
				pdb.Status.CurrentHealthy == pdb.Status.ExpectedPods {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("budget %s never counted its pods: %+v, %v", name, pdb, err)
			}
			time.Sleep(time.Second)
		}
	}
	evict := func(pod corev1.Pod) error {
		return cs.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}})
	}

	two := pods(pair)
	if len(two) != 2 {
		t.Fatalf("%s runs %d replicas, want 2", pair, len(two))
	}
	for _, pod := range two {
		if blocksScaleDown(pod) {
			t.Errorf("%s has two replicas, yet its pod %s keeps the autoscaler from packing its node", pair, pod.Name)
		}
	}
	if err := evict(two[0]); err != nil {
		t.Fatalf("draining the node of %s's first replica: %v", pair, err)
	}
	if err := evict(two[1]); !apierrors.IsTooManyRequests(err) {
		t.Errorf("evicting %s's second replica while the first is not replaced: %v, want refused by its budget (429)", pair, err)
	}

	one := pods(single)
	if len(one) != 1 {
		t.Fatalf("%s runs %d replicas, want 1", single, len(one))
	}
	if !blocksScaleDown(one[0]) {
		t.Errorf("%s's only replica %s may be moved by the cluster autoscaler to pack nodes", single, one[0].Name)
	}
	if err := evict(one[0]); err != nil {
		t.Errorf("draining the node of %s's only replica (a node upgrade): %v, want allowed", single, err)
	}
}
