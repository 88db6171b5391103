package policy

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/kube"
)

// Names of the ClusterPolicies and their rules, as Kyverno reports them.
const (
	RequireResourcesName   = "gpu-require-resources"
	AllowedRegistriesName  = "gpu-allowed-registries"
	DisallowPrivilegedName = "gpu-disallow-privileged"
	GPUTaintName           = "gpu-taint"
	GPUTolerationName      = "gpu-toleration"
	CPUOnlyName            = "gpu-free-namespaces"

	RuleDeclareResources    = "gpu-containers-declare-resources"
	RuleGPUPodRegistries    = "gpu-pod-images"
	RuleNamespaceRegistries = "gpu-namespace-images"
	RuleNoPrivileged        = "no-privileged-gpu-containers"
	RuleAddToleration       = "add-gpu-toleration"
	RuleTaintNeedsGPU       = "gpu-toleration-needs-gpu-request"
	RuleNoGPU               = "no-gpu-requests-or-tolerations"
)

// CEL shared by the validation rules. Kyverno's autogen rewrites
// object.spec for Deployments, Jobs and the other pod controllers, so a
// workload is rejected when it is applied, not when its pods are created.
// The containers are every kind a pod has: an ephemeral container (kubectl
// debug) runs in the pod as much as the others, and Kyverno judges the
// pods/ephemeralcontainers subresource by the rules that match Pod
// (kyverno v1.19.0 pkg/controllers/webhook/utils_webhook.go,
// pkg/engine/utils/match.go).
var (
	celContainers = variable("containers",
		"object.spec.containers + (has(object.spec.initContainers) ? object.spec.initContainers : [])"+
			" + (has(object.spec.ephemeralContainers) ? object.spec.ephemeralContainers : [])")
	// the containers that declare resources: an ephemeral container may
	// not (a pod's resources are fixed, core/v1 EphemeralContainerCommon)
	celResourcedContainers = variable("containers",
		"object.spec.containers + (has(object.spec.initContainers) ? object.spec.initContainers : [])")
	// A GPU pod requests nvidia.com/gpu or, with MIG's mixed strategy, a
	// nvidia.com/mig-<profile> slice.
	celGPU = variable("gpu", "variables.containers.exists(c, has(c.resources) && ("+
		"(has(c.resources.limits) && c.resources.limits.exists(k, "+isGPUResource("k")+")) || "+
		"(has(c.resources.requests) && c.resources.requests.exists(k, "+isGPUResource("k")+"))))")
	// Tolerating the GPU taint: its key, or the wildcard toleration.
	celTolerates = variable("tolerates", "has(object.spec.tolerations) && object.spec.tolerations.exists(t, "+
		"(has(t.key) && t.key == '"+gpupool.GPUTaintKey+"') || ((!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists'))")
	// Aimed at GPU nodes: the GPU taint's own key, not the wildcard that
	// node agents (node-exporter, log collectors, CNI) carry to run on
	// every node.
	celTargetsGPUNodes = variable("targetsGPUNodes", "has(object.spec.tolerations) && object.spec.tolerations.exists(t, "+
		"has(t.key) && t.key == '"+gpupool.GPUTaintKey+"')")
	// The GPU rules' subject: a pod that requests a GPU, or one that is
	// aimed at GPU nodes and is no node agent (a DaemonSet's pod).
	celGPUWorkload = variable("gpuWorkload", "variables.gpu || (variables.targetsGPUNodes && !variables.daemonSet)")
	// A node agent: a pod whose controller is an apps/v1 DaemonSet (not
	// any kind named DaemonSet: owner references are not authenticated).
	celDaemonSet = variable("daemonSet", "has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(o, "+
		"has(o.controller) && o.controller && o.apiVersion == 'apps/v1' && o.kind == 'DaemonSet')")
	// The same normalisation as NormalizeImage: docker.io for images without
	// a registry host, docker.io/library for single-name images.
	celImages = variable("images", "variables.containers.map(c, c.image.contains('/') ? "+
		"((c.image.split('/')[0].contains('.') || c.image.split('/')[0].contains(':') || c.image.split('/')[0] == 'localhost') ? "+
		"c.image : 'docker.io/' + c.image) : 'docker.io/library/' + c.image)")
)

// operatorOwned: a pod an operator the stack trusts created for a custom
// resource of its own, by group and kind (cert-manager's HTTP-01 solver
// for a Challenge): the platform's, not ours, even in our namespaces. Any
// other owner, a forged one included, leaves the pod judged.
func operatorOwned(owners []string) map[string]any {
	var kinds []string
	for _, gk := range owners {
		group, kind, _ := strings.Cut(gk, "/")
		kinds = append(kinds, fmt.Sprintf("(o.apiVersion.startsWith('%s/') && o.kind == '%s')", group, kind))
	}
	return variable("operatorOwned", "has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(o, "+
		"has(o.controller) && o.controller && ("+strings.Join(kinds, " || ")+"))")
}

func isGPUResource(k string) string {
	return fmt.Sprintf("%s == 'nvidia.com/gpu' || %s.startsWith('nvidia.com/mig-')", k, k)
}

func variable(name, expr string) map[string]any {
	return map[string]any{"name": name, "expression": expr}
}

// ClusterPolicies are the enabled policies as plain objects, in a fixed
// order. Nothing when the block is switched off.
func ClusterPolicies(r Resolved) []map[string]any {
	if !r.On() {
		return nil
	}
	var out []map[string]any
	if r.RequireResources.On() {
		out = append(out, requireResources(r))
	}
	if r.AllowedRegistries.On() {
		out = append(out, allowedRegistries(r))
	}
	if r.DisallowPrivileged.On() {
		out = append(out, disallowPrivileged(r))
	}
	if r.GPUTaint.On() {
		out = append(out, gpuToleration(), gpuTaint(r))
	}
	if len(r.CPUOnlyNamespaces) > 0 {
		out = append(out, cpuOnly(r))
	}
	return out
}

// cpuOnly keeps GPUs out of the namespaces of what runs on CPU nodes (the
// vector databases): no GPU request, no toleration of the GPU taint. It
// always enforces: a vector database on a GPU node is a mistake, not a
// report, whatever the block's action.
func cpuOnly(r Resolved) map[string]any {
	return clusterPolicy(CPUOnlyName, "No GPUs for CPU workloads",
		"Pods in "+strings.Join(r.CPUOnlyNamespaces, ", ")+" (vector databases) neither request a GPU nor tolerate "+gpupool.GPUTaint+": they belong on CPU nodes.",
		nil, validateRule(RuleNoGPU, Enforce, podMatch(r.CPUOnlyNamespaces), nil,
			[]any{celContainers, celGPU, celTolerates},
			"!variables.gpu && !variables.tolerates",
			"pods in this namespace run on CPU nodes: no nvidia.com/gpu request and no toleration of the GPU taint "+gpupool.GPUTaint))
}

func requireResources(r Resolved) map[string]any {
	limits := "'memory' in c.resources.limits"
	what := "cpu and memory requests and a memory limit"
	if r.RequireResources.RequireCPULimit {
		limits = "'cpu' in c.resources.limits && " + limits
		what = "cpu and memory requests and limits"
	}
	return clusterPolicy(RequireResourcesName, "GPU pods declare their resources",
		"Every container of a pod that requests a GPU declares "+what+", so GPU nodes are packed by what pods really use.",
		nil, validateRule(RuleDeclareResources, r.RequireResources.Action, podMatch(nil), nil,
			[]any{celResourcedContainers, celGPU},
			"!variables.gpu || variables.containers.all(c, has(c.resources) && has(c.resources.requests) && "+
				"'cpu' in c.resources.requests && 'memory' in c.resources.requests && has(c.resources.limits) && "+limits+")",
			"every container of a GPU pod must declare "+what))
}

func allowedRegistries(r Resolved) map[string]any {
	var prefixes []string
	for _, reg := range r.AllowedRegistries.Registries {
		prefixes = append(prefixes, "'"+strings.TrimSuffix(reg, "/")+"'")
	}
	list := strings.Join(r.AllowedRegistries.Registries, ", ")
	allowed := "variables.images.all(i, [" + strings.Join(prefixes, ", ") + "].exists(p, " +
		"i == p || i.startsWith(p + '/') || i.startsWith(p + ':') || i.startsWith(p + '@')))"
	msg := "images must come from the allowed registries: " + list
	action := r.AllowedRegistries.Action
	return clusterPolicy(AllowedRegistriesName, "GPU images from allowed registries",
		"GPU workloads, and the pods of the platform, serving and batch namespaces, pull images only from "+list+
			". Node agents (DaemonSets) and pods an operator creates for its own resources are the platform's and left alone.",
		noDaemonSetAutogen,
		validateRule(RuleGPUPodRegistries, action, podMatch(nil), nil,
			[]any{celContainers, celGPU, celTargetsGPUNodes, celDaemonSet, celGPUWorkload, celImages}, "!variables.gpuWorkload || "+allowed, msg),
		validateRule(RuleNamespaceRegistries, action, podMatch([]string{r.PlatformNamespace, r.ServingNamespace, r.BatchNamespace}), nil,
			[]any{celContainers, celImages, operatorOwned(r.AllowedRegistries.OperatorOwners)}, "variables.operatorOwned || "+allowed, msg))
}

func disallowPrivileged(r Resolved) map[string]any {
	exempt := r.exempt(r.DisallowPrivileged.ExemptNamespaces)
	return clusterPolicy(DisallowPrivilegedName, "No privileged GPU containers",
		"GPU workloads run no privileged container, outside "+strings.Join(exempt, ", ")+
			" (the GPU operator's DaemonSets need privileges to load drivers); node agents (DaemonSets) are the platform's.",
		noDaemonSetAutogen, validateRule(RuleNoPrivileged, r.DisallowPrivileged.Action, podMatch(nil), exclude(exempt),
			[]any{celContainers, celGPU, celTargetsGPUNodes, celDaemonSet, celGPUWorkload},
			"!variables.gpuWorkload || variables.containers.all(c, !has(c.securityContext) || "+
				"!has(c.securityContext.privileged) || !c.securityContext.privileged)",
			"containers of GPU workloads must not be privileged"))
}

// gpuToleration adds the GPU toleration to pods that request a GPU. A
// policy of its own: Kyverno generates no controller rules for a policy
// with a JSON patch, and the taint check below needs them.
func gpuToleration() map[string]any {
	jp := "request.object.spec.[containers, initContainers || `[]`][] | " +
		"[].[keys(resources.limits || `{}`), keys(resources.requests || `{}`)][][] | " +
		"[?@ == 'nvidia.com/gpu' || starts_with(@, 'nvidia.com/mig-')]"
	// The very toleration the program gives its own GPU pods (JSON is YAML).
	tol, _ := json.Marshal(gpupool.GPUToleration)
	return clusterPolicy(GPUTolerationName, "GPU pods tolerate the GPU taint",
		"Pods that request a GPU get the toleration for "+gpupool.GPUTaint+".",
		nil, map[string]any{
			"name":  RuleAddToleration,
			"match": podMatch(nil),
			"preconditions": map[string]any{"all": []any{
				map[string]any{"key": "{{ length(" + jp + ") }}", "operator": "GreaterThan", "value": 0},
				map[string]any{"key": "{{ length(request.object.spec.tolerations[?key == '" + gpupool.GPUTaintKey + "'] || `[]`) }}", "operator": "Equals", "value": 0},
			}},
			"mutate": map[string]any{
				// Kyverno creates /spec/tolerations when the pod has none.
				"patchesJson6902": "- op: add\n  path: /spec/tolerations/-\n  value: " + string(tol) + "\n",
			},
		})
}

// gpuTaint keeps pods that do not request a GPU off GPU nodes.
func gpuTaint(r Resolved) map[string]any {
	exempt := r.exempt(r.GPUTaint.ExemptNamespaces)
	return clusterPolicy(GPUTaintName, "GPU nodes for GPU pods",
		"Pods that tolerate "+gpupool.GPUTaint+" by its key without requesting a GPU are rejected, outside "+
			strings.Join(exempt, ", ")+" and DaemonSets. A pod that tolerates every taint is a cluster component (a CNI's control plane), admitted.",
		noDaemonSetAutogen,
		validateRule(RuleTaintNeedsGPU, r.GPUTaint.Action, podMatch(nil), exclude(exempt),
			[]any{celContainers, celGPU, celTargetsGPUNodes, celDaemonSet},
			"!variables.targetsGPUNodes || variables.gpu || variables.daemonSet",
			"only pods that request nvidia.com/gpu may tolerate the GPU taint "+gpupool.GPUTaint))
}

// noDaemonSetAutogen leaves DaemonSets out of Kyverno's autogen: node
// agents (log shippers, CNI, exporters) run on every node by design, and
// their pods are judged as pods.
var noDaemonSetAutogen = map[string]any{"pod-policies.kyverno.io/autogen-controllers": "Deployment,ReplicaSet,StatefulSet,Job,CronJob"}

func clusterPolicy(name, title, description string, annotations map[string]any, rules ...map[string]any) map[string]any {
	ann := map[string]any{
		"policies.kyverno.io/title":       title,
		"policies.kyverno.io/category":    "GPU",
		"policies.kyverno.io/subject":     "Pod",
		"policies.kyverno.io/description": description,
	}
	for k, v := range annotations {
		ann[k] = v
	}
	rs := make([]any, len(rules))
	for i, r := range rules {
		rs[i] = r
	}
	return map[string]any{
		"apiVersion": "kyverno.io/v1",
		"kind":       "ClusterPolicy",
		"metadata": map[string]any{
			"name":        name,
			"labels":      map[string]any{"app.kubernetes.io/part-of": kube.Project, kube.ManagedByLabel: kube.ManagedBy},
			"annotations": ann,
		},
		"spec": map[string]any{"background": true, "rules": rs},
	}
}

func validateRule(name string, action Action, match, exclude map[string]any, variables []any, expr, msg string) map[string]any {
	rule := map[string]any{
		"name":  name,
		"match": match,
		"validate": map[string]any{
			"failureAction": string(action),
			"cel": map[string]any{
				"variables":   variables,
				"expressions": []any{map[string]any{"expression": expr, "message": msg}},
			},
		},
	}
	if exclude != nil {
		rule["exclude"] = exclude
	}
	return rule
}

func podMatch(namespaces []string) map[string]any {
	res := map[string]any{"kinds": []any{"Pod"}}
	if len(namespaces) > 0 {
		res["namespaces"] = toAny(namespaces)
	}
	return map[string]any{"any": []any{map[string]any{"resources": res}}}
}

func exclude(namespaces []string) map[string]any {
	return map[string]any{"any": []any{map[string]any{"resources": map[string]any{"namespaces": toAny(namespaces)}}}}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
