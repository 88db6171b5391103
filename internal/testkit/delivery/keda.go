package delivery

import (
	"context"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KEDAReplicas is what KEDA's scale executor sets a ScaledObject's target
// to when no trigger is active (nothing queues on the simulated cluster),
// and whether it acts: keda v2.20.2 pkg/scaling/executor/
// scale_scaledobjects.go, RequestScale with isActive false, no error and
// no idleReplicaCount. Above zero with minReplicaCount 0 it scales to
// zero (after cooldownPeriod, which the simulation does not wait out);
// below minReplicaCount it scales up to it; otherwise it leaves the
// replicas to the HPA.
func KEDAReplicas(current, minReplicas int32) (int32, bool) {
	switch {
	case current > 0 && minReplicas == 0:
		return 0, true
	case current < minReplicas:
		return minReplicas, true
	}
	return current, false
}

// StartKEDA runs KEDA's idle scaling (KEDAReplicas) over every
// ScaledObject's Deployment twice a second, until stop is called or the
// test ends.
func (c *Cluster) StartKEDA(t testing.TB) (stop func()) {
	t.Helper()
	var mu sync.Mutex
	stopped := false
	c.every(t, func(ctx context.Context) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("keda.sh/v1alpha1")
		list.SetKind("ScaledObjectList")
		if err := c.Client.List(ctx, list); err != nil {
			return
		}
		for _, so := range list.Items {
			kind, _, _ := unstructured.NestedString(so.Object, "spec", "scaleTargetRef", "kind")
			name, _, _ := unstructured.NestedString(so.Object, "spec", "scaleTargetRef", "name")
			minReplicas, _, _ := unstructured.NestedInt64(so.Object, "spec", "minReplicaCount") // default 0
			if kind != "" && kind != "Deployment" {
				continue
			}
			var d appsv1.Deployment
			if err := c.Client.Get(ctx, client.ObjectKey{Namespace: so.GetNamespace(), Name: name}, &d); err != nil {
				continue
			}
			current := int32(1)
			if d.Spec.Replicas != nil {
				current = *d.Spec.Replicas
			}
			if want, act := KEDAReplicas(current, int32(minReplicas)); act {
				patch := client.MergeFrom(d.DeepCopy())
				d.Spec.Replicas = &want
				_ = c.Client.Patch(ctx, &d, patch, client.FieldOwner("keda"))
			}
		}
	})
	return func() { mu.Lock(); stopped = true; mu.Unlock() }
}
