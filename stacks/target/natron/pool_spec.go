package natron

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/kube"
)

// Cluster API storage versions (Cluster API v1.14, Metal3 v1.13). v1beta1 is
// deprecated and, without the conversion webhook, loses required fields.
const (
	MachineDeploymentAPIVersion     = "cluster.x-k8s.io/v1beta2"
	KubeadmConfigTemplateAPIVersion = "bootstrap.cluster.x-k8s.io/v1beta2"
	Metal3MachineTemplateAPIVersion = "infrastructure.cluster.x-k8s.io/v1beta2"

	AnnotationMinSize = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
	AnnotationMaxSize = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
	capacityPrefix    = "capacity.cluster-autoscaler.kubernetes.io/"
	LabelClusterName  = "cluster.x-k8s.io/cluster-name"
	LabelSite         = "gpu.natron.cloud/site"

	// LabelAccelerator is set at kubelet start so the Cluster API
	// autoscaler does not scale out again while the device plugin starts.
	LabelAccelerator = "cluster-api/accelerator"
	// LabelHardwareProfile is the BareMetalHost label a site's inventory
	// sets to the host's hardware profile; pools select hosts by it.
	LabelHardwareProfile = "gpu.natron.cloud/hardware-profile"
	// LabelMIGConfig asks the GPU operator's MIG manager for a layout (AKS
	// partitions through the agent pool's profile instead).
	LabelMIGConfig = "nvidia.com/mig.config"
)

// ClusterAPIObjects are one pool's objects in the management cluster, as
// unstructured Kubernetes objects.
type ClusterAPIObjects struct {
	Bootstrap         map[string]any // KubeadmConfigTemplate
	Infrastructure    map[string]any // Metal3MachineTemplate
	MachineDeployment map[string]any
}

// Objects maps a resolved pool to its Cluster API objects. Pure: same
// input, same objects.
//
// Templates are named after a hash of their content: Cluster API treats
// templates as immutable, so a change makes a new template and the
// MachineDeployment rolls its machines over to it.
func Objects(c Cluster, pool gpupool.Resolved) ClusterAPIObjects {
	spec := pool.Spec
	base := c.ClusterName + "-" + spec.Name
	labels := map[string]any{
		LabelClusterName:    c.ClusterName,
		gpupool.LabelPool:   spec.Name,
		LabelSite:           c.Site,
		kube.ManagedByLabel: kube.ManagedBy,
	}
	nodeLabels := NodeLabels(pool)
	bootstrapSpec := bootstrapTemplateSpec(nodeLabels)
	infraSpec := infraTemplateSpec(c, pool.SKU.Name)
	bootstrapName := base + "-" + contentHash(bootstrapSpec)
	infraName := base + "-" + contentHash(infraSpec)
	md := machineDeployment(c, pool, base, labels, autoscalerAnnotations(pool, nodeLabels), bootstrapName, infraName)
	return ClusterAPIObjects{
		Bootstrap: map[string]any{
			"apiVersion": KubeadmConfigTemplateAPIVersion,
			"kind":       "KubeadmConfigTemplate",
			"metadata":   map[string]any{"name": bootstrapName, "namespace": c.Namespace, "labels": copyMap(labels)},
			"spec":       bootstrapSpec,
		},
		Infrastructure: map[string]any{
			"apiVersion": Metal3MachineTemplateAPIVersion,
			"kind":       "Metal3MachineTemplate",
			"metadata":   map[string]any{"name": infraName, "namespace": c.Namespace, "labels": copyMap(labels)},
			"spec":       infraSpec,
		},
		MachineDeployment: md,
	}
}

// bootstrapTemplateSpec is the KubeadmConfigTemplate's spec: the node joins
// with its labels and the GPU taint.
func bootstrapTemplateSpec(nodeLabels map[string]string) map[string]any {
	return map[string]any{
		"template": map[string]any{"spec": map[string]any{
			"joinConfiguration": map[string]any{"nodeRegistration": map[string]any{
				// Metal3 fills these from the host's metadata; the uuid
				// label lets CAPM3 match the Node to its BareMetalHost.
				"name": "{{ ds.meta_data.name }}",
				"kubeletExtraArgs": []any{
					map[string]any{"name": "node-labels", "value": "metal3.io/uuid={{ ds.meta_data.uuid }}," + joinLabels(nodeLabels)},
				},
				// Registered with the taint, so nothing without a GPU
				// request can land in the window before any controller runs.
				"taints": []any{
					map[string]any{"key": gpupool.GPUTaintKey, "value": gpupool.GPUTaintValue, "effect": gpupool.GPUTaintEffect},
				},
			}},
		}},
	}
}

// infraTemplateSpec is the Metal3MachineTemplate's spec: the OS image and
// the hosts of the pool's hardware profile.
func infraTemplateSpec(c Cluster, profile string) map[string]any {
	image := map[string]any{"url": c.Image.URL, "checksum": c.Image.Checksum}
	if c.Image.ChecksumType != "" {
		image["checksumType"] = c.Image.ChecksumType
	}
	if c.Image.DiskFormat != "" {
		image["diskFormat"] = c.Image.DiskFormat
	}
	return map[string]any{
		"template": map[string]any{"spec": map[string]any{
			"image":                 image,
			"automatedCleaningMode": "metadata",
			"hostSelector": map[string]any{"matchLabels": map[string]any{
				LabelHardwareProfile: profile,
			}},
		}},
	}
}

// machineDeployment is the pool's MachineDeployment, its replicas left to
// the cluster autoscaler.
func machineDeployment(c Cluster, pool gpupool.Resolved, base string, labels, annotations map[string]any, bootstrapName, infraName string) map[string]any {
	spec := pool.Spec
	return map[string]any{
		"apiVersion": MachineDeploymentAPIVersion,
		"kind":       "MachineDeployment",
		"metadata": map[string]any{
			"name":        base,
			"namespace":   c.Namespace,
			"labels":      copyMap(labels),
			"annotations": annotations,
		},
		"spec": map[string]any{
			"clusterName": c.ClusterName,
			// No replicas: the cluster autoscaler owns them, and Cluster API
			// starts the deployment at the min-size annotation.
			"selector": map[string]any{"matchLabels": map[string]any{
				LabelClusterName:  c.ClusterName,
				gpupool.LabelPool: spec.Name,
			}},
			// Hosts are finite: a surge would need a spare host of this
			// profile, so replace one machine at a time instead.
			"rollout": map[string]any{"strategy": map[string]any{
				"type":          "RollingUpdate",
				"rollingUpdate": map[string]any{"maxSurge": 0, "maxUnavailable": 1},
			}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{
					LabelClusterName:  c.ClusterName,
					gpupool.LabelPool: spec.Name,
				}},
				"spec": map[string]any{
					"clusterName": c.ClusterName,
					"version":     c.KubernetesVersion,
					"bootstrap": map[string]any{"configRef": map[string]any{
						"apiGroup": "bootstrap.cluster.x-k8s.io",
						"kind":     "KubeadmConfigTemplate",
						"name":     bootstrapName,
					}},
					"infrastructureRef": map[string]any{
						"apiGroup": "infrastructure.cluster.x-k8s.io",
						"kind":     "Metal3MachineTemplate",
						"name":     infraName,
					},
				},
			},
		},
	}
}

// NodeLabels are the labels of the pool's nodes: every target's, plus the
// Cluster API autoscaler's accelerator label and, with MIG, the layout the
// GPU operator's MIG manager applies.
func NodeLabels(pool gpupool.Resolved) map[string]string {
	l := gpupool.NodeLabels(pool)
	l[LabelAccelerator] = pool.SKU.GPU.Label
	if pool.Facts.MIGInstance != "" {
		l[LabelMIGConfig] = "all-" + pool.Facts.MIGInstance
	}
	return l
}

// autoscalerAnnotations carry the bounds and, for scale from zero, what a
// node of this pool would offer, since there is no node to look at.
func autoscalerAnnotations(pool gpupool.Resolved, nodeLabels map[string]string) map[string]any {
	return map[string]any{
		AnnotationMinSize:            strconv.Itoa(pool.Spec.MinNodes),
		AnnotationMaxSize:            strconv.Itoa(pool.Spec.MaxNodes),
		capacityPrefix + "cpu":       strconv.Itoa(pool.SKU.VCPUs),
		capacityPrefix + "memory":    strconv.Itoa(pool.SKU.MemoryGiB) + "Gi",
		capacityPrefix + "gpu-type":  pool.Facts.GPUResource, // the resource name the template node offers
		capacityPrefix + "gpu-count": strconv.Itoa(pool.Facts.GPUResourcesPerNode),
		capacityPrefix + "labels":    joinLabels(nodeLabels),
		capacityPrefix + "taints":    gpupool.GPUTaint,
	}
}

// joinLabels renders labels as sorted k=v pairs, comma-separated: the format
// of kubelet's --node-labels and of the autoscaler's capacity annotation.
func joinLabels(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + l[k]
	}
	return strings.Join(parts, ",")
}

// contentHash is a short stable digest of plain data: fmt prints map keys in
// sorted order, so equal content gives equal names across runs.
func contentHash(v any) string {
	h := sha256.New()
	fmt.Fprintf(h, "%v", v)
	return hex.EncodeToString(h.Sum(nil))[:8]
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
