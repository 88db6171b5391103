package delivery

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Converged waits up to limit until every delivered object that has a
// health is Healthy by Argo CD's rules (Deployments available, DaemonSets
// on every node, Jobs complete, claims bound, ExternalSecrets synced) and
// no pod is Pending, and returns what is not, if anything.
func (c *Cluster) Converged(ctx context.Context, objs []*unstructured.Unstructured, limit time.Duration) []string {
	deadline := time.Now().Add(limit)
	for {
		problems := c.problems(ctx, objs)
		if len(problems) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			if note := c.waitingNote(); note != "" && len(problems) > 0 {
				problems = append(problems, note)
			}
			return problems
		}
		time.Sleep(time.Second)
	}
}

func (c *Cluster) problems(ctx context.Context, objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		h, err := c.liveHealth(ctx, o)
		switch {
		case err != nil:
			out = append(out, err.Error())
		case h != nil && h.Status != Healthy:
			out = append(out, fmt.Sprintf("%s: %s %s", key(o), h.Status, h.Message))
		}
	}
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods); err != nil {
		return append(out, err.Error())
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodPending {
			msg := "not scheduled"
			if i := slices.IndexFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodScheduled }); i >= 0 && p.Status.Conditions[i].Message != "" {
				msg = p.Status.Conditions[i].Message
			} else if p.Spec.NodeName != "" {
				msg = "on " + p.Spec.NodeName + ", not started"
			}
			out = append(out, fmt.Sprintf("Pod/%s/%s Pending: %s", p.Namespace, p.Name, msg))
		}
	}
	return out
}

// liveHealth is the health of o's live object (nil: it has none).
func (c *Cluster) liveHealth(ctx context.Context, o *unstructured.Unstructured) (*HealthStatus, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(o.GroupVersionKind())
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
		return nil, fmt.Errorf("%s: %w", key(o), err)
	}
	h, err := Health(live)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key(o), err)
	}
	return h, nil
}

// Workloads are the cluster's Deployments, DaemonSets, StatefulSets, Jobs,
// claims and ExternalSecrets: what a delivery that is not read from files
// (the engine's own apply) is judged by.
func (c *Cluster) Workloads(ctx context.Context) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, gvk := range []struct{ apiVersion, kind string }{{"apps/v1", "Deployment"}, {"apps/v1", "DaemonSet"},
		{"apps/v1", "StatefulSet"}, {"batch/v1", "Job"}, {"v1", "PersistentVolumeClaim"}, {"external-secrets.io/v1", "ExternalSecret"}} {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(gvk.apiVersion)
		list.SetKind(gvk.kind + "List")
		if err := c.Client.List(ctx, list); err != nil {
			if gvk.kind == "ExternalSecret" {
				continue // no External Secrets Operator on this cluster
			}
			return nil, fmt.Errorf("list %s: %w", gvk.kind, err)
		}
		for i := range list.Items {
			o := list.Items[i]
			o.SetAPIVersion(gvk.apiVersion)
			o.SetKind(gvk.kind)
			out = append(out, &o)
		}
	}
	return out, nil
}
