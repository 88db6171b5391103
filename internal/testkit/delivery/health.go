package delivery

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Argo CD health codes (gitops-engine v0.7.3 pkg/health/health.go).
const (
	Healthy     = "Healthy"
	Progressing = "Progressing"
	Degraded    = "Degraded"
	Suspended   = "Suspended"
	Unknown     = "Unknown"
)

// HealthStatus is a live object's health as Argo CD judges it.
type HealthStatus struct{ Status, Message string }

// Health is Argo CD's health of a live object, for the kinds the program
// delivers that have a health check: gitops-engine's built-in checks
// (v0.7.3 pkg/health/health_*.go) and Argo CD's Lua check for
// ExternalSecret (argo-cd resource_customizations/external-secrets.io/
// ExternalSecret/health.lua). nil is "no health", which a sync counts as
// success.
func Health(o *unstructured.Unstructured) (*HealthStatus, error) {
	if o.GetDeletionTimestamp() != nil {
		return &HealthStatus{Progressing, "Pending deletion"}, nil
	}
	gk := o.GroupVersionKind().GroupKind()
	switch gk.Group + "/" + gk.Kind {
	case "apps/Deployment":
		var d appsv1.Deployment
		return typed(o, &d, func() *HealthStatus { return deploymentHealth(&d) })
	case "apps/DaemonSet":
		var d appsv1.DaemonSet
		return typed(o, &d, func() *HealthStatus { return daemonSetHealth(&d) })
	case "apps/StatefulSet":
		var s appsv1.StatefulSet
		return typed(o, &s, func() *HealthStatus { return statefulSetHealth(&s) })
	case "batch/Job":
		var j batchv1.Job
		return typed(o, &j, func() *HealthStatus { return jobHealth(&j) })
	case "/PersistentVolumeClaim":
		var p corev1.PersistentVolumeClaim
		return typed(o, &p, func() *HealthStatus { return pvcHealth(&p) })
	case "/Service":
		var s corev1.Service
		return typed(o, &s, func() *HealthStatus { return serviceHealth(&s) })
	case "external-secrets.io/ExternalSecret":
		return externalSecretHealth(o), nil
	}
	return nil, nil
}

func typed(o *unstructured.Unstructured, into any, judge func() *HealthStatus) (*HealthStatus, error) {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
		return &HealthStatus{Unknown, err.Error()}, fmt.Errorf("convert %s: %w", o.GetKind(), err)
	}
	return judge(), nil
}

// health_deployment.go getAppsv1DeploymentHealth.
func deploymentHealth(d *appsv1.Deployment) *HealthStatus {
	if d.Spec.Paused {
		return &HealthStatus{Suspended, "Deployment is paused"}
	}
	if d.Generation > d.Status.ObservedGeneration {
		return &HealthStatus{Progressing, "Waiting for rollout to finish: observed deployment generation less then desired generation"}
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			return &HealthStatus{Degraded, fmt.Sprintf("Deployment %q exceeded its progress deadline", d.Name)}
		}
	}
	switch {
	case d.Spec.Replicas != nil && d.Status.UpdatedReplicas < *d.Spec.Replicas:
		return &HealthStatus{Progressing, fmt.Sprintf("Waiting for rollout to finish: %d out of %d new replicas have been updated...", d.Status.UpdatedReplicas, *d.Spec.Replicas)}
	case d.Status.Replicas > d.Status.UpdatedReplicas:
		return &HealthStatus{Progressing, fmt.Sprintf("Waiting for rollout to finish: %d old replicas are pending termination...", d.Status.Replicas-d.Status.UpdatedReplicas)}
	case d.Status.AvailableReplicas < d.Status.UpdatedReplicas:
		return &HealthStatus{Progressing, fmt.Sprintf("Waiting for rollout to finish: %d of %d updated replicas are available...", d.Status.AvailableReplicas, d.Status.UpdatedReplicas)}
	}
	return &HealthStatus{Status: Healthy}
}

// health_daemonset.go getAppsv1DaemonSetHealth.
func daemonSetHealth(d *appsv1.DaemonSet) *HealthStatus {
	switch {
	case d.Generation > d.Status.ObservedGeneration:
		return &HealthStatus{Progressing, "Waiting for rollout to finish: observed daemon set generation less then desired generation"}
	case d.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType:
		return &HealthStatus{Status: Healthy}
	case d.Status.UpdatedNumberScheduled < d.Status.DesiredNumberScheduled:
		return &HealthStatus{Progressing, fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d out of %d new pods have been updated...", d.Name, d.Status.UpdatedNumberScheduled, d.Status.DesiredNumberScheduled)}
	case d.Status.NumberAvailable < d.Status.DesiredNumberScheduled:
		return &HealthStatus{Progressing, fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d of %d updated pods are available...", d.Name, d.Status.NumberAvailable, d.Status.DesiredNumberScheduled)}
	}
	return &HealthStatus{Status: Healthy}
}

// health_statefulset.go getAppsv1StatefulSetHealth (the parts the
// program's StatefulSets reach: RollingUpdate without a partition).
func statefulSetHealth(s *appsv1.StatefulSet) *HealthStatus {
	switch {
	case s.Status.ObservedGeneration == 0 || s.Generation > s.Status.ObservedGeneration:
		return &HealthStatus{Progressing, "Waiting for statefulset spec update to be observed..."}
	case s.Spec.Replicas != nil && s.Status.ReadyReplicas < *s.Spec.Replicas:
		return &HealthStatus{Progressing, fmt.Sprintf("Waiting for %d pods to be ready...", *s.Spec.Replicas-s.Status.ReadyReplicas)}
	case s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType:
		return &HealthStatus{Status: Healthy}
	case s.Status.UpdateRevision != s.Status.CurrentRevision:
		return &HealthStatus{Progressing, "waiting for statefulset rolling update to complete"}
	}
	return &HealthStatus{Status: Healthy}
}

// health_job.go getBatchv1JobHealth.
func jobHealth(j *batchv1.Job) *HealthStatus {
	var failed, complete bool
	var msg string
	for _, c := range j.Status.Conditions {
		switch c.Type {
		case batchv1.JobFailed:
			failed, complete, msg = true, true, c.Message
		case batchv1.JobComplete:
			complete = true
		}
	}
	switch {
	case !complete:
		return &HealthStatus{Status: Progressing}
	case failed:
		return &HealthStatus{Degraded, msg}
	}
	return &HealthStatus{Status: Healthy}
}

// health_pvc.go getCorev1PVCHealth.
func pvcHealth(p *corev1.PersistentVolumeClaim) *HealthStatus {
	switch p.Status.Phase {
	case corev1.ClaimLost:
		return &HealthStatus{Status: Degraded}
	case corev1.ClaimPending:
		return &HealthStatus{Status: Progressing}
	case corev1.ClaimBound:
		return &HealthStatus{Status: Healthy}
	}
	return &HealthStatus{Status: Unknown}
}

// health_service.go getCorev1ServiceHealth.
func serviceHealth(s *corev1.Service) *HealthStatus {
	if s.Spec.Type == corev1.ServiceTypeLoadBalancer && len(s.Status.LoadBalancer.Ingress) == 0 {
		return &HealthStatus{Status: Progressing}
	}
	return &HealthStatus{Status: Healthy}
}

// externalSecretHealth is argo-cd's ExternalSecret/health.lua: the Ready
// condition decides (False Degraded, True Healthy; with refreshPolicy
// OnChange only a condition newer than the last refresh); without one,
// Progressing.
func externalSecretHealth(o *unstructured.Unstructured) *HealthStatus {
	policy, _, _ := unstructured.NestedString(o.Object, "spec", "refreshPolicy")
	refreshed, _, _ := unstructured.NestedString(o.Object, "status", "refreshTime")
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		changed, _ := m["lastTransitionTime"].(string)
		if m["type"] != "Ready" || (policy == "OnChange" && changed < refreshed) {
			continue
		}
		msg, _ := m["message"].(string)
		switch m["status"] {
		case "False":
			return &HealthStatus{Degraded, msg}
		case "True":
			return &HealthStatus{Healthy, msg}
		}
		return nil // the Lua returns nothing: no health
	}
	return &HealthStatus{Progressing, "Waiting for ExternalSecret"}
}
