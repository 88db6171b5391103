package kubeapi

import (
	"fmt"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/gpupool"
)

// TemplateNodeAnnotation marks a Node that stands for the cluster
// autoscaler's template of a node group at zero (nodesim's
// ClusterAPITemplateNode, AKSTemplateNode): the autoscaler simulates
// scheduling on it with the GPUs its node group's annotations or VM size
// promise, before any node, let alone a device plugin, exists.
const TemplateNodeAnnotation = "sim.gpu-node-pools.test/autoscaler-template"

// runTimeLabels are the label domains NFD, GPU feature discovery and the
// GPU operator set at run time; joinLabels are the keys in them a pool's
// nodes register with (gpupool.NodeLabels; the bare-metal MIG pools'
// nvidia.com/mig.config, natron.LabelMIGConfig, which asks the MIG
// manager for a layout), the only ones a node may join with.
var (
	runTimeLabels = []string{"feature.node.kubernetes.io/", "nvidia.com/"}
	joinLabels    = map[string]bool{gpupool.LabelGPUPresent: true, gpupool.LabelDevicePluginConfig: true, "nvidia.com/mig.config": true}
)

// MadeAtRunTime says why an object is one an upstream component makes at
// run time, which no test may make by hand (its stand-in makes it, once
// its upstream would), or "" when it is not: a RuntimeClass (the GPU
// operator's), a Node that joins with GPUs advertised or with NFD's, GPU
// feature discovery's or the operator's labels (the device plugin's and
// those components' work), an EndpointSlice (the endpoint slice
// controller's), a Secret of the operators' certificates (delivery's
// RuntimeSecret).
func MadeAtRunTime(obj map[string]any) string {
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	switch kind {
	case "RuntimeClass":
		return fmt.Sprintf("RuntimeClass %s: the GPU operator makes it from its ClusterPolicy (gpustack)", name)
	case "EndpointSlice":
		return fmt.Sprintf("EndpointSlice %s: the endpoint slice controller makes it", name)
	case "Secret":
		if name == "kedaorg-certs" {
			return "Secret kedaorg-certs: KEDA's operator makes it (delivery.KEDACerts)"
		}
	case "Node":
		if ann, _ := meta["annotations"].(map[string]any); ann[TemplateNodeAnnotation] == "true" {
			return ""
		}
		status, _ := obj["status"].(map[string]any)
		for _, part := range []string{"capacity", "allocatable"} {
			res, _ := status[part].(map[string]any)
			for r := range res {
				if strings.HasPrefix(r, "nvidia.com/") {
					return fmt.Sprintf("Node %s joins with %s %s: the device plugin advertises it once its pod runs there (gpustack)", name, part, r)
				}
			}
		}
		labels, _ := meta["labels"].(map[string]any)
		for l := range labels {
			for _, p := range runTimeLabels {
				if strings.HasPrefix(l, p) && !joinLabels[l] {
					return fmt.Sprintf("Node %s joins with label %s: NFD, GPU feature discovery or the GPU operator sets it once it runs (gpustack)", name, l)
				}
			}
		}
	}
	return ""
}

// refuseRunTimeObjects fails the test on an object MadeAtRunTime names.
func refuseRunTimeObjects(t testing.TB, objs []map[string]any) {
	t.Helper()
	for _, o := range objs {
		if why := MadeAtRunTime(o); why != "" {
			t.Fatalf("a test made by hand what an upstream component makes at run time: %s", why)
		}
	}
}
