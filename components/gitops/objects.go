package gitops

import (
	"path"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes/scheme"

	"github.com/natron/gpu-node-pools/internal/secret"
)

// Layer is a folder of a rendered tree, applied in order: what a layer
// needs is in the layers before it.
type Layer struct {
	// Dir is the layer's folder in the tree; Wave its Argo CD sync wave.
	Dir  string
	Wave int
}

// Layers, in apply order: Namespaces and CRDs; the built-in Kubernetes
// objects (operators' Deployments, RBAC, webhooks, Services, ...); then
// the custom resources, whose CRDs and operators the earlier layers (or
// the platform) bring.
var Layers = []Layer{
	{Dir: "1-namespaces-crds", Wave: 0},
	{Dir: "2-resources", Wave: 1},
	{Dir: "3-custom-resources", Wave: 2},
}

// Classify is the layer of an object, by its apiVersion and kind. Built-in
// means a group the Kubernetes API server serves itself (client-go's
// scheme, which registers every built-in group). ExternalSecrets go with
// the built-in objects: the pods of that layer read the Secrets they make
// (a pod whose Secret came a layer later would never start, and its layer
// never become healthy), and their CRD and operator are the platform's,
// there before the tree.
func Classify(apiVersion, kind string) Layer {
	if kind == "Namespace" || kind == "CustomResourceDefinition" {
		return Layers[0]
	}
	group, _, found := strings.Cut(apiVersion, "/")
	if !found {
		group = "" // the core group: v1
	}
	if scheme.Scheme.IsGroupRegistered(group) || (group == ExternalSecretsGroup && kind == "ExternalSecret") {
		return Layers[1]
	}
	return Layers[2]
}

// ExternalSecretsGroup is the External Secrets Operator's API group.
const ExternalSecretsGroup = "external-secrets.io"

// Trees are the rendered trees the tool syncs, each to its own cluster.
const (
	WorkloadTree   = "workload"
	ManagementTree = "management"
)

// Destination is one tree and the cluster it goes to.
type Destination struct {
	Tree    string
	Cluster string
}

// Destinations are the trees of a stack: the workload tree, and the
// management tree when the target has a management cluster.
func (s Spec) Destinations(management bool) []Destination {
	out := []Destination{{Tree: WorkloadTree, Cluster: s.WorkloadCluster}}
	if management {
		out = append(out, Destination{Tree: ManagementTree, Cluster: s.ManagementCluster})
	}
	return out
}

// Application is the Argo CD Application syncing one tree: automated with
// prune and self-heal, server-side apply (CRDs too large for the
// last-applied annotation), namespaces created, retried with back-off.
// The layers' sync waves order what it applies.
func Application(s Spec, prefix string, d Destination) map[string]any {
	dest := map[string]any{"server": d.Cluster}
	if !strings.HasPrefix(d.Cluster, "https://") {
		dest = map[string]any{"name": d.Cluster}
	}
	return map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
		"metadata": map[string]any{"name": prefix + "-" + d.Tree, "namespace": s.Namespace},
		"spec": map[string]any{
			"project":     s.Project,
			"source":      map[string]any{"repoURL": s.RepoURL, "targetRevision": s.TargetRevision, "path": path.Join(s.Path, d.Tree)},
			"destination": dest,
			"syncPolicy": map[string]any{
				"automated":   map[string]any{"prune": true, "selfHeal": true},
				"syncOptions": []any{"ServerSideApply=true", "CreateNamespace=true"},
				"retry":       map[string]any{"limit": 5, "backoff": map[string]any{"duration": "10s", "factor": 2, "maxDuration": "3m"}},
			},
		},
	}
}

// GitRepository is Flux's source of the platform repository.
func GitRepository(s Spec, prefix string) map[string]any {
	spec := map[string]any{"url": s.RepoURL, "interval": s.Interval, "ref": map[string]any{"branch": s.TargetRevision}}
	if s.CredentialsSecret != "" {
		spec["secretRef"] = map[string]any{"name": s.CredentialsSecret}
	}
	return map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": prefix, "namespace": s.Namespace},
		"spec":     spec,
	}
}

// Kustomizations are Flux's Kustomizations of one tree, one per layer,
// each depending on the one before (dependsOn: Flux applies a layer once
// the one before is ready, with wait on, which health-checks what it
// applied), pruning what leaves the tree.
func Kustomizations(s Spec, prefix string, d Destination) []map[string]any {
	var out []map[string]any
	previous := ""
	for _, l := range Layers {
		name := prefix + "-" + d.Tree + "-" + l.Dir
		spec := map[string]any{
			"interval":  s.Interval,
			"timeout":   s.Timeout,
			"path":      "./" + path.Join(s.Path, d.Tree, l.Dir),
			"prune":     true,
			"wait":      true,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": prefix},
		}
		if previous != "" {
			spec["dependsOn"] = []any{map[string]any{"name": previous}}
		}
		if d.Cluster != "" {
			spec["kubeConfig"] = map[string]any{"secretRef": map[string]any{"name": d.Cluster}}
		}
		out = append(out, map[string]any{
			"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
			"metadata": map[string]any{"name": name, "namespace": s.Namespace},
			"spec":     spec,
		})
		previous = name
	}
	return out
}

// StoreKey is the store entry that holds Secret namespace/name's keys, one
// property each: <keyPrefix>/<namespace>/<name>.
func (e ExternalSecrets) StoreKey(namespace, name string) string {
	return path.Join(e.KeyPrefix, namespace, name)
}

// ExternalSecret is the External Secrets Operator's object that makes one
// Secret a render left out: each secret key is a property of the store's
// entry <keyPrefix>/<namespace>/<name>; the values that are not secret and
// the Secret's type come from the template, merged with what the store
// gives (external-secrets v0.16.2
// pkg/controllers/externalsecret/externalsecret_controller_template.go,
// applyTemplate: with mergePolicy Merge the fetched keys stay, and
// template.data, executed by the v2 engine, takes precedence).
func ExternalSecret(e ExternalSecrets, ext secret.External) map[string]any {
	data := make([]any, len(ext.Keys))
	for i, k := range ext.Keys {
		data[i] = map[string]any{"secretKey": k, "remoteRef": map[string]any{"key": e.StoreKey(ext.Namespace, ext.Name), "property": k}}
	}
	target := map[string]any{"name": ext.Name, "creationPolicy": "Owner"}
	if len(ext.Values) > 0 || ext.Type != "" {
		tpl := map[string]any{"engineVersion": "v2", "mergePolicy": "Merge"}
		if ext.Type != "" {
			tpl["type"] = ext.Type
		}
		if len(ext.Values) > 0 {
			values := map[string]any{}
			for k, v := range ext.Values {
				values[k] = literal(v)
			}
			tpl["data"] = values
		}
		target["template"] = tpl
	}
	return map[string]any{
		"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
		"metadata": map[string]any{"name": ext.Name, "namespace": ext.Namespace},
		"spec": map[string]any{
			"refreshInterval": e.RefreshInterval,
			"secretStoreRef":  map[string]any{"name": e.Store, "kind": e.StoreKind},
			"target":          target,
			"data":            data,
		},
	}
}

// literal is v as a v2 template (Go text/template) that yields v itself:
// text with no action delimiter is printed as is; one with "{{" is quoted.
func literal(v string) string {
	if !strings.Contains(v, "{{") {
		return v
	}
	return "{{ " + strconv.Quote(v) + " }}"
}
