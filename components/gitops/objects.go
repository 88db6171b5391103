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

// Layers, in apply order. An object's layer follows from what it needs,
// so that whatever a pod needs exists (or is being made) before the pod:
//   - Namespaces and CRDs;
//   - inputs: what pods read and what tells an operator what to make for
//     them, none of which runs a pod (Place);
//   - providers: the pods that need nothing the GPU stack makes at run
//     time: operators (the GPU operator, which makes the RuntimeClass and
//     the device plugin that advertises the GPUs), the weight downloads,
//     gateways, agents, with the webhooks and API services they serve;
//   - the custom resources, whose CRDs and operators the earlier layers
//     (or the platform) bring: policies, monitors, backups, databases.
//     None needs a GPU pod, so none waits for a model's cold start, nor
//     for ever when a pool has no GPU to give;
//   - the pods that need the GPU stack's RuntimeClass or GPUs (the model
//     servers, batch jobs): their downloads finished, their GPUs
//     advertised; with the ScaledObjects that set their replicas;
//   - 3-custom-resources, which held every custom resource until they
//     moved earlier, and now holds the GitOps tool's own objects (the
//     Applications, Kustomizations and GitRepository of the gitops tree):
//     the platform's app-of-apps points at that folder, and an object
//     that left it would be pruned there.
//
// Flux prunes only objects still labelled as its own, and the
// Kustomization that applies an object relabels it: an object moved to a
// later Kustomization is deleted before that one applies it
// (fluxcd/kustomize-controller#338); one moved to an earlier one is kept
// once the earlier one has applied it. The layers added since the first
// release (1a, 1b, 1c) come before the ones that held their objects, so no
// object of an earlier render moves later. Both Kustomizations change in
// the same commit, though, and the old one may prune before the new
// layers exist: docs/rendering.md gives the upgrade's safe procedure.
var Layers = []Layer{
	{Dir: "1-namespaces-crds", Wave: 0},
	{Dir: "1a-inputs", Wave: 1},
	{Dir: "1b-providers", Wave: 2},
	{Dir: "1c-custom-resources", Wave: 3},
	{Dir: "2-resources", Wave: 4},
	{Dir: "3-custom-resources", Wave: 5},
}

// Layer indexes, by what the layer holds.
const (
	LayerCRDs = iota
	LayerInputs
	LayerProviders
	LayerCustom
	LayerGPUWorkloads
	LayerDelivery
)

// inputKinds are the custom resources whose effect pods need, made at run
// time by the platform's operators or the GPU stack's: the Secrets the
// External Secrets Operator writes, the flows Cilium allows, and the GPU
// operator's ClusterPolicy, from which it makes the RuntimeClass and the
// device plugin (gpu-operator v26.7.0 controllers/state_manager.go). None
// needs a webhook of the tree to be admitted.
var inputKinds = map[string]bool{
	ExternalSecretsGroup + "/ExternalSecret": true,
	"cilium.io/CiliumNetworkPolicy":          true,
	"nvidia.com/ClusterPolicy":               true,
}

// serving are built-in kinds that need their pods to answer: an admission
// webhook or aggregated API service without its pods refuses or stalls
// the requests it intercepts, so it goes with the workloads.
var serving = map[string]bool{
	"admissionregistration.k8s.io/MutatingWebhookConfiguration":   true,
	"admissionregistration.k8s.io/ValidatingWebhookConfiguration": true,
	"apiregistration.k8s.io/APIService":                           true,
}

// scalers are the custom resources that set their workload's replicas:
// they go with the workloads. KEDA (the platform's) scales an idle model
// that scales from zero to none as soon as both are there (keda v2.20.2
// pkg/scaling/executor/scale_scaledobjects.go: no active trigger, no last
// active time); a layer later, the model's first replica had to finish a
// cold start (or, with GPUs short, never could) before the layer that
// brought its scaler was applied.
var scalers = map[string]bool{
	"keda.sh/ScaledObject": true,
}

// deliveryKinds are the GitOps tools' own objects, which stay in the
// folder the platform's app-of-apps (or bootstrap) was pointed at.
var deliveryKinds = map[string]bool{
	"argoproj.io/Application":                   true,
	"argoproj.io/AppProject":                    true,
	"kustomize.toolkit.fluxcd.io/Kustomization": true,
	"source.toolkit.fluxcd.io/GitRepository":    true,
}

// Place is an object's layer, from what it needs (Layers): by its
// apiVersion and kind and, for what runs pods, by whether its pods ask for
// a RuntimeClass or for extended resources of nvidia.com (which only the
// GPU stack makes, at run time). Built-in means a group the Kubernetes API
// server serves itself (client-go's scheme, which registers every
// built-in group).
func Place(obj map[string]any) Layer {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if kind == "Namespace" || kind == "CustomResourceDefinition" {
		return Layers[LayerCRDs]
	}
	group, _, found := strings.Cut(apiVersion, "/")
	if !found {
		group = "" // the core group: v1
	}
	switch {
	case inputKinds[group+"/"+kind]:
		return Layers[LayerInputs]
	case scalers[group+"/"+kind]:
		return Layers[LayerGPUWorkloads]
	case deliveryKinds[group+"/"+kind]:
		return Layers[LayerDelivery]
	case !scheme.Scheme.IsGroupRegistered(group):
		return Layers[LayerCustom]
	case serving[group+"/"+kind]:
		return Layers[LayerProviders]
	}
	spec, runsPods := PodSpec(obj)
	switch {
	case !runsPods:
		return Layers[LayerInputs]
	case needsGPUStack(spec):
		return Layers[LayerGPUWorkloads]
	}
	return Layers[LayerProviders]
}

// PodTemplate is the pod template of an object that makes pods (a Pod
// is its own; a workload's spec.template; a CronJob's job template's; nil
// when it has none) and whether the object makes pods.
func PodTemplate(obj map[string]any) (map[string]any, bool) {
	var path []string
	switch obj["kind"] {
	case "Pod":
		return obj, true
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "ReplicationController":
		path = []string{"spec", "template"}
	case "CronJob":
		path = []string{"spec", "jobTemplate", "spec", "template"}
	default:
		return nil, false
	}
	m := obj
	for _, k := range path {
		m, _ = m[k].(map[string]any)
	}
	return m, true
}

// PodSpec is the pod spec of an object that makes pods (nil when it has
// none) and whether the object makes pods.
func PodSpec(obj map[string]any) (map[string]any, bool) {
	tmpl, ok := PodTemplate(obj)
	spec, _ := tmpl["spec"].(map[string]any)
	return spec, ok
}

// needsGPUStack reports whether a pod asks for what only the GPU stack
// makes at run time: a RuntimeClass (the GPU operator's) or an nvidia.com
// resource (the device plugin's).
func needsGPUStack(spec map[string]any) bool {
	if rc, _ := spec["runtimeClassName"].(string); rc != "" {
		return true
	}
	for _, list := range []string{"initContainers", "containers"} {
		cs, _ := spec[list].([]any)
		for _, c := range cs {
			res, _ := c.(map[string]any)["resources"].(map[string]any)
			for _, part := range []string{"requests", "limits"} {
				m, _ := res[part].(map[string]any)
				for name := range m {
					if strings.HasPrefix(name, "nvidia.com/") {
						return true
					}
				}
			}
		}
	}
	return false
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
