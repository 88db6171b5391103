package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/natron/gpu-node-pools/internal/testkit/kyvernotest"
)

// pod is a test pod (or, with kind, a pod controller) described by what
// the policies look at.
type pod struct {
	name, ns, kind string
	image          string
	gpu            string // resource name requested, "" for none
	noResources    bool   // no cpu/memory requests and limits
	cpuLimit       bool
	initNoRes      bool // an init container without resources
	privileged     bool
	tolerations    []any
	daemonSet      bool     // owned by a DaemonSet
	owner          []string // apiVersion and kind of another controlling owner
	// ephemeral is the image of an ephemeral container (kubectl debug),
	// privileged when ephemeralPrivileged
	ephemeral           string
	ephemeralPrivileged bool
}

var (
	gpuTol   = map[string]any{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}
	wildcard = map[string]any{"operator": "Exists"}
)

func (p pod) object() map[string]any {
	c := map[string]any{"name": "main", "image": p.image}
	if p.image == "" {
		c["image"] = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
	}
	limits := map[string]any{}
	if !p.noResources {
		c["resources"] = map[string]any{"requests": map[string]any{"cpu": "1", "memory": "1Gi"}, "limits": limits}
		limits["memory"] = "1Gi"
		if p.cpuLimit {
			limits["cpu"] = "1"
		}
	}
	if p.gpu != "" {
		limits[p.gpu] = "1"
		if p.noResources {
			c["resources"] = map[string]any{"limits": limits}
		}
	}
	if p.privileged {
		c["securityContext"] = map[string]any{"privileged": true}
	}
	spec := map[string]any{"containers": []any{c}}
	if p.initNoRes {
		spec["initContainers"] = []any{map[string]any{"name": "wait", "image": "busybox:1.37"}}
	}
	if p.tolerations != nil {
		spec["tolerations"] = p.tolerations
	}
	if p.ephemeral != "" {
		e := map[string]any{"name": "debugger", "image": p.ephemeral, "targetContainerName": "main"}
		if p.ephemeralPrivileged {
			e["securityContext"] = map[string]any{"privileged": true}
		}
		spec["ephemeralContainers"] = []any{e}
	}
	meta := map[string]any{"name": p.name, "namespace": p.ns}
	if p.daemonSet {
		p.owner = []string{"apps/v1", "DaemonSet"}
	}
	if p.owner != nil {
		meta["ownerReferences"] = []any{map[string]any{"apiVersion": p.owner[0], "kind": p.owner[1], "name": "owner", "uid": "0b1c", "controller": true}}
	}
	if p.kind == "" {
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
	}
	labels := map[string]any{"app": p.name}
	return map[string]any{
		"apiVersion": "apps/v1", "kind": p.kind, "metadata": meta,
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{"metadata": map[string]any{"labels": labels}, "spec": spec},
		},
	}
}

var testScope = Scope{PlatformNamespace: "gpu-platform", ServingNamespace: "models", BatchNamespace: "batch"}

// Verdicts of the real Kyverno engine on good and bad pods, with the
// default policies. Only the listed rules are compared; every other rule
// must pass or be skipped.
func TestPoliciesInKyverno(t *testing.T) {
	t.Parallel()
	const (
		resources = RequireResourcesName + "/" + RuleDeclareResources
		gpuImages = AllowedRegistriesName + "/" + RuleGPUPodRegistries
		nsImages  = AllowedRegistriesName + "/" + RuleNamespaceRegistries
		priv      = DisallowPrivilegedName + "/" + RuleNoPrivileged
		taint     = GPUTaintName + "/" + RuleTaintNeedsGPU
	)
	cases := []struct {
		pod  pod
		fail []string
		// toleration: the GPU toleration is there after mutation, once.
		toleration bool
	}{
		{pod: pod{name: "gpu-good", ns: "team-a", gpu: "nvidia.com/gpu"}, toleration: true},
		{pod: pod{name: "gpu-mig", ns: "team-a", gpu: "nvidia.com/mig-3g.40gb"}, toleration: true},
		{pod: pod{name: "gpu-already-tolerates", ns: "team-a", gpu: "nvidia.com/gpu", tolerations: []any{gpuTol}}, toleration: true},
		{pod: pod{name: "gpu-no-resources", ns: "team-a", gpu: "nvidia.com/gpu", noResources: true}, fail: []string{resources}, toleration: true},
		{pod: pod{name: "gpu-init-no-resources", ns: "team-a", gpu: "nvidia.com/gpu", initNoRes: true}, fail: []string{resources}, toleration: true},
		{pod: pod{name: "gpu-quay", ns: "team-a", gpu: "nvidia.com/gpu", image: "quay.io/acme/trainer:1"}, fail: []string{gpuImages}, toleration: true},
		{pod: pod{name: "gpu-dockerhub-vllm", ns: "team-a", gpu: "nvidia.com/gpu", image: "vllm/vllm-openai:v0.11.0"}, toleration: true},
		{pod: pod{name: "gpu-dockerhub-library", ns: "team-a", gpu: "nvidia.com/gpu", image: "python:3.12"}, fail: []string{gpuImages}, toleration: true},
		{pod: pod{name: "gpu-privileged", ns: "team-a", gpu: "nvidia.com/gpu", privileged: true}, fail: []string{priv}, toleration: true},
		{pod: pod{name: "cpu-tolerates-gpu", ns: "team-a", tolerations: []any{gpuTol}}, fail: []string{taint}},
		// a pod that tolerates everything is a cluster component, not aimed
		// at GPU nodes: Calico's Typha, a Deployment with the operator's
		// TolerateAll ([{operator: Exists}], tigera/operator
		// pkg/render/common/meta/meta.go, used by pkg/render/typha.go),
		// must reschedule on a cluster with GPU pools
		{pod: pod{name: "cpu-tolerates-all", ns: "team-a", tolerations: []any{wildcard}}},
		{pod: pod{name: "calico-typha", ns: "calico-system", kind: "Deployment", image: "quay.io/calico/typha:v3.30.0", tolerations: []any{wildcard}}},
		{pod: pod{name: "cpu-tolerates-privileged", ns: "team-a", tolerations: []any{gpuTol}, privileged: true, image: "quay.io/x/y:1"},
			fail: []string{taint, priv, gpuImages}},
		// a CPU pod that stays off GPU nodes is none of our business...
		{pod: pod{name: "cpu-plain", ns: "team-a", image: "quay.io/acme/web:1", privileged: true, noResources: true}},
		// ...unless it runs in the serving namespace
		{pod: pod{name: "cpu-in-models", ns: "models", image: "quay.io/acme/web:1"}, fail: []string{nsImages}},
		// per-node agents and the platform's own DaemonSets
		// node agents run on every node, GPU nodes included: the platform's
		{pod: pod{name: "agent", ns: "logging", image: "quay.io/acme/agent:1", tolerations: []any{wildcard}, daemonSet: true}},
		{pod: pod{name: "agent-privileged", ns: "security", image: "quay.io/acme/sensor:1", tolerations: []any{wildcard}, privileged: true, daemonSet: true}},
		{pod: pod{name: "agent-gpu-aware", ns: "monitoring", image: "quay.io/acme/gpu-agent:1", tolerations: []any{gpuTol}, daemonSet: true}},
		{pod: pod{name: "ds-agent", ns: "monitoring", kind: "DaemonSet", image: "quay.io/acme/gpu-agent:1", tolerations: []any{gpuTol}, privileged: true}},
		// ...but a DaemonSet that requests GPUs is a GPU workload
		{pod: pod{name: "gpu-daemonset", ns: "team-a", gpu: "nvidia.com/gpu", image: "quay.io/acme/burn:1", daemonSet: true}, fail: []string{gpuImages}, toleration: true},
		// a pod an operator creates for its own resource (cert-manager's
		// HTTP-01 solver for a Challenge) in our namespace is the platform's
		{pod: pod{name: "acme-solver", ns: "models", image: "quay.io/jetstack/cert-manager-acmesolver:v1.21.1", owner: []string{"acme.cert-manager.io/v1", "Challenge"}}},
		// ...while our own controllers' pods there are checked
		{pod: pod{name: "replicaset-in-models", ns: "models", image: "quay.io/acme/web:1", owner: []string{"apps/v1", "ReplicaSet"}}, fail: []string{nsImages}},
		// and so is a pod whose owner only claims to be an operator's: owner
		// references are not authenticated, so only the trusted kinds count
		{pod: pod{name: "forged-operator-owner", ns: "models", image: "quay.io/evil/miner:1", owner: []string{"evil.io/v1", "Sandbox"}}, fail: []string{nsImages}},
		{pod: pod{name: "forged-challenge-group", ns: "models", image: "quay.io/evil/miner:1", owner: []string{"evil.io/v1", "Challenge"}}, fail: []string{nsImages}},
		// or to be a DaemonSet's, of another group: aimed at GPU nodes,
		// privileged, from anywhere
		{pod: pod{name: "forged-daemonset", ns: "team-a", image: "quay.io/evil/miner:1", tolerations: []any{gpuTol}, privileged: true,
			owner: []string{"evil.io/v1", "DaemonSet"}}, fail: []string{taint, priv, gpuImages}},
		// an ephemeral container runs in the pod as much as its others
		{pod: pod{name: "debug-in-models", ns: "models", image: "docker.io/vllm/vllm-openai:v0.14.1", ephemeral: "quay.io/evil/shell:1"}, fail: []string{nsImages}},
		{pod: pod{name: "gpu-privileged-debug", ns: "team-a", gpu: "nvidia.com/gpu", ephemeral: "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", ephemeralPrivileged: true},
			fail: []string{priv}, toleration: true},
		{pod: pod{name: "gpu-operator-driver", ns: "gpu-platform", tolerations: []any{gpuTol}, privileged: true, daemonSet: true}},
		{pod: pod{name: "platform-not-nvidia", ns: "gpu-platform", image: "quay.io/x/y:1"}, fail: []string{nsImages}},
		// pod controllers are checked when applied (Kyverno's autogen)
		{pod: pod{name: "deploy-no-resources", ns: "team-a", kind: "Deployment", gpu: "nvidia.com/gpu", noResources: true},
			fail: []string{RequireResourcesName + "/autogen-" + RuleDeclareResources}},
		{pod: pod{name: "deploy-tolerates", ns: "team-a", kind: "Deployment", tolerations: []any{gpuTol}},
			fail: []string{GPUTaintName + "/autogen-" + RuleTaintNeedsGPU}},
	}
	var objs []map[string]any
	for _, c := range cases {
		objs = append(objs, c.pod.object())
	}
	out := kyvernotest.Apply(t, ClusterPolicies(Spec{}.Resolve(testScope)), objs)
	for _, c := range cases {
		kind := c.pod.kind
		if kind == "" {
			kind = "Pod"
		}
		got := out.Verdicts[kind+"/"+c.pod.ns+"/"+c.pod.name]
		if len(got) == 0 {
			t.Errorf("%s: no verdicts at all", c.pod.name)
			continue
		}
		failed := map[string]bool{}
		for rule, result := range got {
			if result != "pass" && result != "skip" {
				failed[rule] = true
			}
		}
		want := map[string]bool{}
		for _, r := range c.fail {
			want[r] = true
		}
		if d := cmp.Diff(want, failed); d != "" {
			t.Errorf("%s: failing rules (-want +got):\n%s\nall verdicts: %v", c.pod.name, d, got)
		}
		if kind != "Pod" {
			continue
		}
		n := 0
		if m, ok := out.Mutated[c.pod.name]; ok {
			tols, _ := m["spec"].(map[string]any)["tolerations"].([]any)
			for _, tol := range tols {
				if cmp.Equal(tol, any(gpuTol)) {
					n++
				}
			}
		}
		if c.toleration && n != 1 || !c.toleration && n > 0 && c.pod.tolerations == nil {
			t.Errorf("%s: GPU tolerations after mutation = %d, want toleration=%v", c.pod.name, n, c.toleration)
		}
	}
}
