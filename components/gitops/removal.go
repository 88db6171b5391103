package gitops

import "fmt"

// Removal is how to take a stack's render out of the GitOps repository so
// that its objects are deleted too, given the render's trees and the
// prefix of its GitOps objects' names. Flux deletes what a pruning
// Kustomization applied when the Kustomization goes (flux delete
// kustomization: "and the Kubernetes resources created by it when prune
// is enabled", fluxcd.io/flux/cmd/flux_delete_kustomization); Argo CD
// deletes an Application's objects only with its resources finalizer
// (argo-cd docs/user-guide/app_deletion.md, "To perform a cascade delete
// set the finalizer"), which ours do not carry (deleting one by mistake
// must never take the GPU stack with it), so it is added first.
func Removal(s Spec, prefix string, trees []string) []string {
	if s.Tool == Flux {
		return []string{fmt.Sprintf("Delete %s/ in one commit: the Kustomizations of %s/gitops prune, so when the platform's Flux removes them, Flux deletes every object they applied.", s.Path, s.Path)}
	}
	out := []string{"First let Argo CD delete the objects with each Application (its resources finalizer cascades the deletion):"}
	for _, t := range trees {
		out = append(out, fmt.Sprintf("  kubectl -n %s patch applications.argoproj.io %s-%s --type merge -p '{\"metadata\":{\"finalizers\":[\"resources-finalizer.argocd.argoproj.io\"]}}'", s.Namespace, prefix, t))
	}
	return append(out, fmt.Sprintf("then delete %s/ in one commit: the platform's Argo CD prunes the Applications, and each takes its objects with it.", s.Path))
}
