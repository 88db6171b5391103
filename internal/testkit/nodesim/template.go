package nodesim

import (
	"fmt"
	"strings"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/testkit/kubeapi"
)

// Capacity annotations the cluster autoscaler's Cluster API provider reads
// (cluster-autoscaler/cloudprovider/clusterapi/clusterapi_utils.go at
// cluster-autoscaler-1.36.1).
const capacityPrefix = "capacity.cluster-autoscaler.kubernetes.io/"

// ClusterAPITemplateNode is the node the cluster autoscaler imagines for a
// MachineDeployment at zero replicas, and then asks Cluster API for
// (clusterapi_nodegroup.go TemplateNodeInfo and buildTemplateLabels,
// clusterapi_unstructured.go InstanceCapacity, Labels, Taints and
// parseTaint, at cluster-autoscaler-1.36.1):
//   - capacity: the cpu, memory and ephemeral-disk annotations, the
//     gpu-count annotation under the resource named by gpu-type (only when
//     both are set), and pods from maxPods, default 110;
//   - labels: kubernetes.io/arch amd64, os linux, hostname, the template's
//     managed node labels (node-role.kubernetes.io, node-restriction and
//     node.cluster.x-k8s.io domains), then the labels annotation "k=v,...";
//   - taints: the template's spec.taints, then the taints annotation
//     "key=value:Effect,...", replacing one of the same key and effect.
//
// Without cpu and memory the node group cannot scale from zero: nil.
func ClusterAPITemplateNode(md map[string]any, name string) map[string]any {
	meta, _ := md["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	get := func(k string) string { s, _ := ann[capacityPrefix+k].(string); return s }
	if get("cpu") == "" || get("memory") == "" {
		return nil
	}
	capacity := map[string]any{"cpu": get("cpu"), "memory": get("memory"), "pods": "110"}
	if d := get("ephemeral-disk"); d != "" {
		capacity["ephemeral-storage"] = d
	}
	if n, typ := get("gpu-count"), get("gpu-type"); n != "" && n != "0" && typ != "" {
		capacity[typ] = n
	}
	if p := get("maxPods"); p != "" {
		capacity["pods"] = p
	}
	labels := map[string]string{}
	spec, _ := md["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	tspec, _ := tmpl["spec"].(map[string]any)
	if tm, ok := tspec["metadata"].(map[string]any); ok {
		if l, ok := tm["labels"].(map[string]any); ok {
			for k, v := range l {
				if managedLabel(k) {
					labels[k] = fmt.Sprint(v)
				}
			}
		}
	}
	for _, kv := range strings.Split(get("labels"), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			labels[k] = v
		}
	}
	var taints []any
	if ts, ok := tspec["taints"].([]any); ok {
		taints = append(taints, ts...)
	}
	for _, s := range strings.Split(get("taints"), ",") {
		kv, effect, ok := strings.Cut(s, ":")
		if !ok {
			continue
		}
		key, value, _ := strings.Cut(kv, "=")
		t := map[string]any{"key": key, "value": value, "effect": effect}
		replaced := false
		for i, e := range taints {
			if em, _ := e.(map[string]any); em["key"] == key && em["effect"] == effect {
				taints[i], replaced = t, true
			}
		}
		if !replaced {
			taints = append(taints, t)
		}
	}
	return templateNode(name, labels, taints, capacity)
}

// templateNode is a node the autoscaler imagines, marked as such: it may
// carry the GPUs its node group promises (kubeapi.MadeAtRunTime).
func templateNode(name string, labels map[string]string, taints []any, capacity map[string]any) map[string]any {
	n := node(name, labels, taints, capacity)
	n["metadata"].(map[string]any)["annotations"].(map[string]any)[kubeapi.TemplateNodeAnnotation] = "true"
	return n
}

// managedLabel is isManagedLabel (clusterapi_utils.go).
func managedLabel(key string) bool {
	domain, _, _ := strings.Cut(key, "/")
	if domain == "node-role.kubernetes.io" {
		return true
	}
	for _, d := range []string{"node-restriction.kubernetes.io", "node.cluster.x-k8s.io"} {
		if domain == d || strings.HasSuffix(domain, "."+d) {
			return true
		}
	}
	return false
}

// AKSTemplateNode is the node the cluster autoscaler imagines for an AKS
// agent pool at zero nodes (cluster-autoscaler/cloudprovider/azure/
// azure_template.go at cluster-autoscaler-1.36.1: the agent pool's node
// labels and taints; capacity from the VM size's vCPUs, memory and GPUs,
// the GPUs as nvidia.com/gpu; the agentpool labels and, on GPU sizes, the
// accelerator label). sku is the VM size, taints are "key=value:Effect".
func AKSTemplateNode(pool string, sku catalog.SKU, nodeLabels map[string]string, taints []string, name string) map[string]any {
	labels := map[string]string{"agentpool": pool, "kubernetes.azure.com/agentpool": pool, "node.kubernetes.io/instance-type": sku.Name}
	for k, v := range nodeLabels {
		labels[k] = v
	}
	capacity := map[string]any{"cpu": fmt.Sprint(sku.VCPUs), "memory": fmt.Sprintf("%dGi", sku.MemoryGiB), "pods": "110"}
	if sku.GPUs > 0 {
		capacity["nvidia.com/gpu"] = fmt.Sprint(sku.GPUs)
		labels["accelerator"], labels["kubernetes.azure.com/accelerator"] = "nvidia", "nvidia"
	}
	var ts []any
	for _, s := range taints {
		kv, effect, _ := strings.Cut(s, ":")
		key, value, _ := strings.Cut(kv, "=")
		ts = append(ts, map[string]any{"key": key, "value": value, "effect": effect})
	}
	return templateNode(name, labels, ts, capacity)
}
