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

// AnyMap is a string map as the plain data objects are built from.
func AnyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
