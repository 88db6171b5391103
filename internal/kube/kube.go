// Package kube holds the Kubernetes conventions the components share: the
// program's name, who manages an object and which objects stay out of
// backups.
package kube

// Project is the program's name: the config namespace, the prefix of every
// component type token and the managed-by value.
const Project = "gpu-node-pools"

// ManagedByLabel marks every object the program owns.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// ManagedBy is the value of ManagedByLabel (and of the managed-by tag on
// Azure resources).
const ManagedBy = Project

// BackupExcludeLabel keeps an object out of every Velero backup: the
// components set it on what holds only caches, and Velero skips it.
const BackupExcludeLabel = "velero.io/exclude-from-backup"

// SkipAwaitAnnotation tells pulumi-kubernetes not to wait for an object
// to become ready (provider/pkg/await, skipAwaitAnnotation).
const SkipAwaitAnnotation = "pulumi.com/skipAwait"

// Unawaited is obj, with SkipAwaitAnnotation merged into its annotations
// when skip is set (platform.skipAwait: a cluster whose pods may never
// run, or an address that comes later).
func Unawaited(obj map[string]any, skip bool) map[string]any {
	if !skip {
		return obj
	}
	meta := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		meta["annotations"] = ann
	}
	ann[SkipAwaitAnnotation] = "true"
	return obj
}

// AnyMap is a string map as the plain data objects are built from.
func AnyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// FillJob is a Job that fills a volume once (weights, a model store): a
// fill outlasts any sensible apply timeout, so nothing awaits it (what
// needs the volume waits for the fill's marker instead), and a changed
// template is a new Job (its name says which fill), which GitOps tools
// replace rather than patch. pod is the pod spec, which restarts on
// failure up to six times.
func FillJob(name, ns string, labels, podLabels, pod map[string]any) map[string]any {
	pod["restartPolicy"] = "OnFailure"
	return map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{
			"name": name, "namespace": ns, "labels": labels,
			"annotations": map[string]any{
				SkipAwaitAnnotation:                 "true",
				"argocd.argoproj.io/sync-options":   "Replace=true",
				"kustomize.toolkit.fluxcd.io/force": "enabled",
			},
		},
		"spec": map[string]any{
			"backoffLimit": 6,
			"template":     map[string]any{"metadata": map[string]any{"labels": podLabels}, "spec": pod},
		},
	}
}
