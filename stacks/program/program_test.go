package program

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/pricing"
	"github.com/natron/gpu-node-pools/internal/testkit/pooltest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
	"github.com/natron/gpu-node-pools/stacks/target/aks"
)

func TestStackOutputs(t *testing.T) {
	t.Parallel()
	pool := pooltest.Resolved(t, pooltest.AKS, gpupool.Spec{Name: "h100spot", SKU: "Standard_NC40ads_H100_v5", MaxNodes: 8, Spot: true})
	cost := &pricing.PoolCost{Hourly: 2.5, AtMin: 0, AtMax: 14600, Expected: 1825, Currency: "USD", Spot: true, Source: "the stack's pricing.prices"}
	got, err := StackOutputs(&plan.Stack{Target: aks.Target{}, RenderDir: "out", Pools: []gpupool.Resolved{pool},
		Costs: map[string]plan.Cost{"h100spot": {Cost: cost}}, LogTolerations: pool.Facts.Tolerations}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := pulumi.Map{
		"target":    pulumi.String("aks"),
		"renderDir": pulumi.String("out"),
		"protect":   pulumi.Bool(true),
		"pools": pulumi.Map{"h100spot": pulumi.Map{
			"name": pulumi.String("h100spot"), "target": pulumi.String("aks"), "sku": pulumi.String("Standard_NC40ads_H100_v5"),
			"gpuModel": pulumi.String("NVIDIA H100 NVL"), "computeCapability": pulumi.Int(90), "gpusPerNode": pulumi.Int(1), "gpuMemoryGB": pulumi.Int(94), "gpuMemoryMiB": pulumi.Int(95830), "gpuResource": pulumi.String("nvidia.com/gpu"),
			"gpuResourcesPerNode": pulumi.Int(1), "memoryPerGpuResourceGB": pulumi.Int(94),
			"minNodes": pulumi.Int(0), "maxNodes": pulumi.Int(8), "spot": pulumi.Bool(true),
			"nodeSelector": pulumi.Map{"gpu.natron.cloud/pool": pulumi.String("h100spot")},
			"tolerations": pulumi.Array{
				pulumi.Map{"key": pulumi.String("nvidia.com/gpu"), "operator": pulumi.String("Equal"), "value": pulumi.String("present"), "effect": pulumi.String("NoSchedule")},
				pulumi.Map{"key": pulumi.String("kubernetes.azure.com/scalesetpriority"), "operator": pulumi.String("Equal"), "value": pulumi.String("spot"), "effect": pulumi.String("NoSchedule")},
			},
			"cost": pulumi.Map{"hourly": pulumi.Float64(2.5), "monthlyAtMinNodes": pulumi.Int(0), "monthlyAtMaxNodes": pulumi.Int(14600),
				"monthlyExpected": pulumi.Int(1825), "currency": pulumi.String("USD"), "source": pulumi.String("the stack's pricing.prices")},
		}},
		"cost": pulumi.Map{"USD": pulumi.Map{"monthlyAtMinNodes": pulumi.Int(0), "monthlyAtMaxNodes": pulumi.Int(14600), "monthlyExpected": pulumi.Int(1825)}},
		"logCollectorTolerations": pulumi.Array{
			pulumi.Map{"key": pulumi.String("nvidia.com/gpu"), "operator": pulumi.String("Equal"), "value": pulumi.String("present"), "effect": pulumi.String("NoSchedule")},
			pulumi.Map{"key": pulumi.String("kubernetes.azure.com/scalesetpriority"), "operator": pulumi.String("Equal"), "value": pulumi.String("spot"), "effect": pulumi.String("NoSchedule")},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("StackOutputs mismatch (-want +got):\n%s", diff)
	}
}

func TestProtectDefault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		stack   string
		protect string // as written in the stack file
		want    bool
	}{
		{"prod", "", true}, {"prod-acme", "auto", true}, {"dev", "", false}, {"staging", "", false},
		{"prod", "false", false}, {"dev", "true", true},
	} {
		raw := stacktest.Encode(t, stacktest.AKS())
		raw["protect"] = tc.protect
		p, err := plan.Load(raw, tc.stack)
		if err != nil {
			t.Fatal(err)
		}
		if p.Protect != tc.want {
			t.Errorf("protect %q on stack %s = %v, want %v", tc.protect, tc.stack, p.Protect, tc.want)
		}
	}
}

// Bare metal applied for real: both providers come from kubeconfig config
// secrets, which stay secret in every input that carries them.
func TestNatronKubeconfigsStaySecret(t *testing.T) {
	t.Parallel()
	c := stacktest.Natron()
	natron := c["natron"].(map[string]any)
	natron["kubeconfig"] = "workload-" + pulumitest.SecretMarker
	natron["managementKubeconfig"] = "management-" + pulumitest.SecretMarker
	cfg := stacktest.Namespaced(stacktest.Encode(t, c))
	m, err := pulumitest.Run(Program, config.Namespace, "prod-acme", cfg, []string{config.Key("natron")})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, r := range m.Resources() {
		for k, v := range r.Inputs {
			plain := !v.IsSecret() && strings.Contains(v.String(), pulumitest.SecretMarker)
			if plain {
				t.Errorf("%s input %s carries the kubeconfig in plain text", r.Name, k)
			}
		}
		if r.Type == "pulumi:providers:kubernetes" {
			kc := r.Inputs[resource.PropertyKey("kubeconfig")]
			if !kc.IsSecret() || kc.SecretValue().Element.StringValue() != r.Name+"-"+pulumitest.SecretMarker {
				t.Errorf("provider %s kubeconfig = %v, want its own kubeconfig as a secret", r.Name, kc)
			}
			found++
		}
		if r.Type == "kubernetes:cluster.x-k8s.io/v1beta2:MachineDeployment" && !r.Protect {
			t.Errorf("%s: a prod stack's machine deployment must be protected", r.Name)
		}
	}
	if found != 2 {
		t.Fatalf("want workload and management providers, found %d", found)
	}
}

// The policies follow the stack: all of them by default, the enabled ones
// only, none when the block is switched off.
func TestPoliciesFollowTheConfig(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		policies map[string]any
		want     int
	}{
		"default":        {nil, 5},
		"taint off":      {map[string]any{"gpuTaint": map[string]any{"enabled": false}}, 3},
		"all off":        {map[string]any{"enabled": false}, 0},
		"audit, one off": {map[string]any{"action": "Audit", "requireResources": map[string]any{"enabled": false}}, 4},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := stacktest.AKS()
			if tc.policies != nil {
				c["policies"] = tc.policies
			}
			m, err := pulumitest.Run(Program, config.Namespace, "dev", stacktest.Namespaced(stacktest.Encode(t, c)), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, components := 0, 0
			for _, r := range m.Resources() {
				switch r.Type {
				case "kubernetes:kyverno.io/v1:ClusterPolicy":
					got++
				case "gpu-node-pools:policy:GPUPolicies":
					components++
				}
			}
			if got != tc.want || (components == 1) != (tc.want > 0) {
				t.Errorf("%d ClusterPolicies in %d components, want %d", got, components, tc.want)
			}
		})
	}
}
