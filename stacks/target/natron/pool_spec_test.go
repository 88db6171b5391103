package natron

import (
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/natron/gpu-node-pools/internal/gpupool"
)

var testCluster = Cluster{
	Site:              "natron-cloud",
	ClusterName:       "acme",
	Namespace:         "capi-acme",
	KubernetesVersion: "v1.33.4",
	Image: MachineImage{
		URL:          "https://images.example/ubuntu.qcow2",
		Checksum:     "https://images.example/ubuntu.qcow2.sha256sum",
		ChecksumType: "sha256",
		DiskFormat:   "qcow2",
	},
}

var templateName = regexp.MustCompile(`^acme-(infer|train)-[0-9a-f]{8}$`)

// wantObjects is the expected Cluster API objects of one pool, with the
// template names as produced (their format is checked separately).
func wantObjects(pool, profile, bootstrapName, infraName, nodeLabels, gpuCount, cpu, mem string, maxNodes string) ClusterAPIObjects {
	objLabels := func() map[string]any {
		return map[string]any{
			"cluster.x-k8s.io/cluster-name": "acme",
			"gpu.natron.cloud/pool":         pool,
			"gpu.natron.cloud/site":         "natron-cloud",
			"app.kubernetes.io/managed-by":  "gpu-node-pools",
		}
	}
	selector := func() map[string]any {
		return map[string]any{"cluster.x-k8s.io/cluster-name": "acme", "gpu.natron.cloud/pool": pool}
	}
	return ClusterAPIObjects{
		Bootstrap: map[string]any{
			"apiVersion": "bootstrap.cluster.x-k8s.io/v1beta2",
			"kind":       "KubeadmConfigTemplate",
			"metadata":   map[string]any{"name": bootstrapName, "namespace": "capi-acme", "labels": objLabels()},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"joinConfiguration": map[string]any{"nodeRegistration": map[string]any{
					"name": "{{ ds.meta_data.name }}",
					"kubeletExtraArgs": []any{map[string]any{
						"name":  "node-labels",
						"value": "metal3.io/uuid={{ ds.meta_data.uuid }}," + nodeLabels,
					}},
					"taints": []any{map[string]any{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}},
				}},
			}}},
		},
		Infrastructure: map[string]any{
			"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
			"kind":       "Metal3MachineTemplate",
			"metadata":   map[string]any{"name": infraName, "namespace": "capi-acme", "labels": objLabels()},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"image": map[string]any{
					"url":          "https://images.example/ubuntu.qcow2",
					"checksum":     "https://images.example/ubuntu.qcow2.sha256sum",
					"checksumType": "sha256",
					"diskFormat":   "qcow2",
				},
				"automatedCleaningMode": "metadata",
				"hostSelector":          map[string]any{"matchLabels": map[string]any{"gpu.natron.cloud/hardware-profile": profile}},
			}}},
		},
		MachineDeployment: map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta2",
			"kind":       "MachineDeployment",
			"metadata": map[string]any{
				"name":      "acme-" + pool,
				"namespace": "capi-acme",
				"labels":    objLabels(),
				"annotations": map[string]any{
					"cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "0",
					"cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": maxNodes,
					"capacity.cluster-autoscaler.kubernetes.io/cpu":               cpu,
					"capacity.cluster-autoscaler.kubernetes.io/memory":            mem,
					"capacity.cluster-autoscaler.kubernetes.io/gpu-type":          "nvidia.com/gpu",
					"capacity.cluster-autoscaler.kubernetes.io/gpu-count":         gpuCount,
					"capacity.cluster-autoscaler.kubernetes.io/labels":            nodeLabels,
					"capacity.cluster-autoscaler.kubernetes.io/taints":            "nvidia.com/gpu=present:NoSchedule",
				},
			},
			"spec": map[string]any{
				"clusterName": "acme",
				"selector":    map[string]any{"matchLabels": selector()},
				"rollout": map[string]any{"strategy": map[string]any{
					"type":          "RollingUpdate",
					"rollingUpdate": map[string]any{"maxSurge": 0, "maxUnavailable": 1},
				}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": selector()},
					"spec": map[string]any{
						"clusterName": "acme",
						"version":     "v1.33.4",
						"bootstrap": map[string]any{"configRef": map[string]any{
							"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfigTemplate", "name": bootstrapName,
						}},
						"infrastructureRef": map[string]any{
							"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "Metal3MachineTemplate", "name": infraName,
						},
					},
				},
			},
		},
	}
}

func TestBareMetalObjects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec gpupool.Spec
		want func(bootstrap, infra string) ClusterAPIObjects
	}{
		{
			name: "H100 inference pool with an extra label",
			spec: gpupool.Spec{Name: "infer", SKU: "h100-80gb-x8", MaxNodes: 4, Labels: map[string]string{"team": "ml"}},
			want: func(b, i string) ClusterAPIObjects {
				return wantObjects("infer", "h100-80gb-x8", b, i,
					"cluster-api/accelerator=h100-80gb,gpu.natron.cloud/gpu-count=8,gpu.natron.cloud/gpu-model=h100-80gb,"+
						"gpu.natron.cloud/pool=infer,gpu.natron.cloud/sku=h100-80gb-x8,nvidia.com/gpu.present=true,team=ml",
					"8", "224", "2048Gi", "4")
			},
		},
		{
			name: "A100 pool split with MIG advertises instances, not GPUs",
			spec: gpupool.Spec{Name: "train", SKU: "a100-80gb-x8", MaxNodes: 2, MIGProfile: "MIG3g"},
			want: func(b, i string) ClusterAPIObjects {
				return wantObjects("train", "a100-80gb-x8", b, i,
					"cluster-api/accelerator=a100-80gb,gpu.natron.cloud/gpu-count=8,gpu.natron.cloud/gpu-model=a100-80gb,"+
						"gpu.natron.cloud/pool=train,gpu.natron.cloud/sku=a100-80gb-x8,nvidia.com/device-plugin.config=train,nvidia.com/gpu.present=true,nvidia.com/mig.config=all-3g.40gb",
					"16", "256", "2048Gi", "2")
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Objects(testCluster, resolved(t, tc.spec))
			b := got.Bootstrap["metadata"].(map[string]any)["name"].(string)
			i := got.Infrastructure["metadata"].(map[string]any)["name"].(string)
			if !templateName.MatchString(b) || !templateName.MatchString(i) || b == i {
				t.Fatalf("template names %q, %q: want <cluster>-<pool>-<8 hex>, distinct", b, i)
			}
			if diff := cmp.Diff(tc.want(b, i), got); diff != "" {
				t.Errorf("Objects mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// Templates are immutable by Cluster API convention: same content keeps the
// name (no churn on every up), new content gets a new name.
func TestTemplateNamesFollowContent(t *testing.T) {
	t.Parallel()
	spec := gpupool.Spec{Name: "infer", SKU: "h100-80gb-x8", MaxNodes: 4}
	name := func(o ClusterAPIObjects) (string, string) {
		return o.Bootstrap["metadata"].(map[string]any)["name"].(string),
			o.Infrastructure["metadata"].(map[string]any)["name"].(string)
	}
	b1, i1 := name(Objects(testCluster, resolved(t, spec)))
	b2, i2 := name(Objects(testCluster, resolved(t, spec)))
	if b1 != b2 || i1 != i2 {
		t.Fatalf("same content, different names: %s/%s vs %s/%s", b1, i1, b2, i2)
	}
	scaled := spec
	scaled.MaxNodes = 9 // only the MachineDeployment changes
	if b3, i3 := name(Objects(testCluster, resolved(t, scaled))); b3 != b1 || i3 != i1 {
		t.Errorf("changing maxNodes renamed templates: %s/%s", b3, i3)
	}
	labelled := spec
	labelled.Labels = map[string]string{"team": "ml"}
	if b4, i4 := name(Objects(testCluster, resolved(t, labelled))); b4 == b1 || i4 != i1 {
		t.Errorf("a new node label must rename only the bootstrap template: %s/%s", b4, i4)
	}
	newImage := testCluster
	newImage.Image.URL = "https://images.example/ubuntu-2.qcow2"
	if b5, i5 := name(Objects(newImage, resolved(t, spec))); b5 != b1 || i5 == i1 {
		t.Errorf("a new image must rename only the machine template: %s/%s", b5, i5)
	}
}

// resolved is a pool with its hardware profile, as the stack's plan holds it.
func resolved(t *testing.T, spec gpupool.Spec) gpupool.Resolved {
	t.Helper()
	sku, err := Profiles.SKU(nil, spec.SKU)
	if err != nil {
		t.Fatal(err)
	}
	return gpupool.Resolve(spec, sku, nil)
}
