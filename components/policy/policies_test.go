package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/natron/gpu-node-pools/internal/testkit/kyvernotest"
)

func off() *bool { f := false; return &f }

// summary is what a policy's configuration changes: its rules' actions,
// exclusions and, for the registry rules, the prefixes.
func summary(policies []map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, p := range policies {
		name := p["metadata"].(map[string]any)["name"].(string)
		rules := map[string]any{}
		for _, r := range p["spec"].(map[string]any)["rules"].([]any) {
			r := r.(map[string]any)
			s := map[string]any{}
			if v, ok := r["validate"].(map[string]any); ok {
				s["action"] = v["failureAction"]
			}
			if e, ok := r["exclude"].(map[string]any); ok {
				s["exclude"] = e["any"].([]any)[0].(map[string]any)["resources"].(map[string]any)["namespaces"]
			}
			if ns := r["match"].(map[string]any)["any"].([]any)[0].(map[string]any)["resources"].(map[string]any)["namespaces"]; ns != nil {
				s["namespaces"] = ns
			}
			rules[r["name"].(string)] = s
		}
		out[name] = rules
	}
	return out
}

func TestClusterPoliciesFollowTheConfig(t *testing.T) {
	t.Parallel()
	enforce := map[string]any{"action": "Enforce"}
	exempt := map[string]any{"action": "Enforce", "exclude": []any{"gpu-platform", "kube-system"}}
	cases := []struct {
		name string
		spec Spec
		want map[string]map[string]any
	}{
		{"defaults", Spec{}, map[string]map[string]any{
			RequireResourcesName: {RuleDeclareResources: enforce},
			AllowedRegistriesName: {RuleGPUPodRegistries: enforce,
				RuleNamespaceRegistries: map[string]any{"action": "Enforce", "namespaces": []any{"gpu-platform", "models", "batch"}}},
			DisallowPrivilegedName: {RuleNoPrivileged: exempt},
			GPUTolerationName:      {RuleAddToleration: map[string]any{}},
			GPUTaintName:           {RuleTaintNeedsGPU: exempt},
		}},
		{"all off", Spec{Enabled: off()}, map[string]map[string]any{}},
		{"audit, some off, more exemptions", Spec{
			Action:             Audit,
			RequireResources:   ResourcesPolicy{Toggle: Toggle{Action: Enforce}},
			AllowedRegistries:  RegistriesPolicy{Toggle: Toggle{Enabled: off()}},
			DisallowPrivileged: ExemptionsPolicy{ExemptNamespaces: []string{"monitoring", "kube-system"}},
			GPUTaint:           ExemptionsPolicy{Toggle: Toggle{Enabled: off()}},
		}, map[string]map[string]any{
			RequireResourcesName: {RuleDeclareResources: enforce},
			DisallowPrivilegedName: {RuleNoPrivileged: map[string]any{"action": "Audit",
				"exclude": []any{"gpu-platform", "kube-system", "monitoring"}}},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := summary(ClusterPolicies(c.spec.Resolve(testScope)))
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("policies (-want +got):\n%s", d)
			}
		})
	}
}

func TestAllows(t *testing.T) {
	t.Parallel()
	regs := []string{"nvcr.io", "docker.io/vllm/", "docker.io/library/busybox", "localhost:5000"}
	for image, want := range map[string]bool{
		"nvcr.io/nvidia/k8s-device-plugin:v0.17.0": true,
		"nvcr.io.evil.com/x:1":                     false,
		"vllm/vllm-openai:v0.11.0":                 true,
		"docker.io/vllm/vllm-openai@sha256:00":     true,
		"vllmx/vllm-openai:v1":                     false,
		"busybox:1.37":                             true,
		"busybox":                                  true,
		"busybox2:1":                               false,
		"localhost:5000/a/b:1":                     true,
		"quay.io/acme/x:1":                         false,
	} {
		if got := Allows(regs, image); got != want {
			t.Errorf("Allows(%q) = %v, want %v", image, got, want)
		}
	}
}

// The options change Kyverno's verdicts as configured.
func TestPolicyOptionsInKyverno(t *testing.T) {
	t.Parallel()
	spec := Spec{
		RequireResources:  ResourcesPolicy{RequireCPULimit: true},
		AllowedRegistries: RegistriesPolicy{Registries: []string{"registry.acme.internal/gpu"}},
		GPUTaint:          ExemptionsPolicy{ExemptNamespaces: []string{"ops"}},
	}
	pods := []pod{
		{name: "no-cpu-limit", ns: "team-a", gpu: "nvidia.com/gpu", image: "registry.acme.internal/gpu/train:1"},
		{name: "mirror", ns: "team-a", gpu: "nvidia.com/gpu", cpuLimit: true, image: "registry.acme.internal/gpu/train:1"},
		{name: "nvcr-not-listed", ns: "team-a", gpu: "nvidia.com/gpu", cpuLimit: true},
		{name: "ops-tolerates", ns: "ops", image: "registry.acme.internal/gpu/debug:1", tolerations: []any{gpuTol}},
	}
	var objs []map[string]any
	for _, p := range pods {
		objs = append(objs, p.object())
	}
	got := kyvernotest.Apply(t, ClusterPolicies(spec.Resolve(testScope)), objs).Verdicts.Failures()
	want := []string{
		"Pod/team-a/no-cpu-limit: " + RequireResourcesName + "/" + RuleDeclareResources + " fail",
		"Pod/team-a/nvcr-not-listed: " + AllowedRegistriesName + "/" + RuleGPUPodRegistries + " fail",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("failures (-want +got):\n%s", d)
	}
}
