package tests

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/natron/gpu-node-pools/components/policy"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/kyvernotest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// podKinds are the kinds Kyverno's pod policies (and their autogen rules)
// look at.
var podKinds = []string{"Pod", "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job", "CronJob"}

// The program's own workloads, exactly as it registers them for each real
// stack (its charts rendered from the real archives with the values it
// passes), pass the ClusterPolicies it installs, in the real Kyverno
// engine: the policies never lock out the platform, the model servers or
// the batch jobs.
func TestOwnWorkloadsPassTheirPolicies(t *testing.T) {
	t.Parallel()
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	for _, stack := range []string{"dev", "prod"} {
		t.Run(stack, func(t *testing.T) {
			t.Parallel()
			policies, workloads := registeredWorkloads(t, stack, charts)
			// dev has a vector database: the policy that keeps GPUs out of its namespace
			if want := map[string]int{"dev": 6, "prod": 5}[stack]; len(policies) != want {
				t.Fatalf("%d ClusterPolicies registered, want %d", len(policies), want)
			}
			kinds := map[string]int{}
			for _, w := range workloads {
				kinds[w["kind"].(string)]++
			}
			// the GPU layer's DaemonSets or operator, a model server, its
			// download Job, the batch CronJob
			for _, k := range []string{"Deployment", "Job", "CronJob"} {
				if kinds[k] == 0 {
					t.Fatalf("no %s among the workloads %v", k, kinds)
				}
			}
			out := kyvernotest.Apply(t, policies, workloads)
			t.Logf("%s: %d workloads %v, %d with verdicts", stack, len(workloads), kinds, len(out.Verdicts))
			if f := out.Verdicts.Failures(); len(f) > 0 {
				t.Errorf("the program's own workloads fail its policies:\n%s", strings.Join(f, "\n"))
			}
			// The GPU rules did look at the model server.
			evaluated := 0
			for res, rules := range out.Verdicts {
				if strings.HasPrefix(res, "Deployment/models/") && rules[policy.RequireResourcesName+"/autogen-"+policy.RuleDeclareResources] == "pass" {
					evaluated++
				}
			}
			if evaluated == 0 {
				t.Errorf("no model server Deployment was checked for resources; verdicts: %v", out.Verdicts)
			}
			// dev installs Grafana Alloy on every node: its DaemonSet, which
			// tolerates the GPU taint, was judged and passed
			if stack == "dev" {
				judged := false
				for res, rules := range out.Verdicts {
					if strings.HasPrefix(res, "DaemonSet/logging/") && len(rules) > 0 {
						judged = true
					}
				}
				if !judged {
					t.Errorf("the log collector's DaemonSet was not judged; verdicts: %v", out.Verdicts)
				}
			}
		})
	}
}

// registeredWorkloads are the ClusterPolicies and the pod-making
// workloads a stack registers (its charts rendered from the real archives
// with the values it passes), from a mock run of the program.
func registeredWorkloads(t *testing.T, stack, charts string) (policies, workloads []map[string]any) {
	t.Helper()
	m, _ := runStack(t, stack)
	releases := planReleases(stackPlan(t, stack))
	for _, r := range m.Resources() {
		switch {
		case r.Type == "kubernetes:kyverno.io/v1:ClusterPolicy":
			policies = append(policies, plainInputs(r.Inputs))
		case r.Type == chartType:
			workloads = append(workloads, releases.patched(renderRegistered(t, charts, r), r)...)
		case slices.Contains(podKinds, r.Type[strings.LastIndex(r.Type, ":")+1:]):
			workloads = append(workloads, plainInputs(r.Inputs))
		}
	}
	return policies, workloads
}

// renderRegistered renders a registered helm Chart resource from the local
// archive with its registered values and namespace, keeping the pod kinds.
func renderRegistered(t *testing.T, charts string, r pulumitest.Resource) []map[string]any {
	t.Helper()
	in := plainInputs(r.Inputs)
	chart, _ := in["chart"].(string)
	if !strings.HasSuffix(chart, ".tgz") {
		version, _ := in["version"].(string)
		chart = filepath.Join(charts, chart+"-"+version+".tgz")
	}
	ns, _ := in["namespace"].(string)
	release, _ := in["name"].(string)
	if release == "" {
		release = r.Name
	}
	values, _ := in["values"].(map[string]any)
	var out []map[string]any
	for _, o := range helmtest.RenderChart(t, chart, release, ns, values, false) {
		if !slices.Contains(podKinds, o["kind"].(string)) {
			continue
		}
		meta := o["metadata"].(map[string]any)
		if meta["namespace"] == nil {
			meta["namespace"] = ns // as the provider applies it
		}
		out = append(out, o)
	}
	return out
}

// releases are a plan's chart releases by release name, with the
// patches the program applies to what they render.
type releases map[string]helm.Release

// planReleases are the releases of a plan's models.
func planReleases(p *plan.Stack) releases {
	out := releases{}
	if p.Serving == nil {
		return out
	}
	for _, e := range p.Serving.Engines {
		out[serving.Release(e.Name)] = serving.EngineRelease(p.Charts, e, p.Serving.Options.Charts.VLLMStack)
	}
	for _, o := range p.Serving.Ollamas {
		out[o.Release()] = serving.OllamaRelease(p.Charts, o, p.Serving.Options.Charts.Ollama)
	}
	return out
}

// patched applies the patches of a registered Chart's release (by its
// release name) to what it rendered, as the program's transform does.
func (rs releases) patched(objs []map[string]any, r pulumitest.Resource) []map[string]any {
	name, _ := plainInputs(r.Inputs)["name"].(string)
	if rel, ok := rs[name]; ok {
		return rel.Apply(objs)
	}
	return objs
}

// plainInputs are a resource's inputs as plain data, secrets unwrapped.
func plainInputs(m resource.PropertyMap) map[string]any {
	var unwrap func(v resource.PropertyValue) (any, bool)
	unwrap = func(v resource.PropertyValue) (any, bool) {
		if v.IsSecret() {
			return v.SecretValue().Element.MapRepl(nil, unwrap), true
		}
		return nil, false
	}
	return m.MapRepl(nil, unwrap)
}

// podOf is a pod as its controller creates it from a pod template: its
// controller owns it.
func podOf(owner map[string]any, name string) map[string]any {
	meta := owner["metadata"].(map[string]any)
	kind, ownerName := owner["kind"], meta["name"]
	if kind == "Deployment" { // its pods belong to its ReplicaSet
		kind, ownerName = "ReplicaSet", fmt.Sprint(ownerName)+"-5d8f7c9b4"
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{
			"name": name, "namespace": meta["namespace"],
			"ownerReferences": []any{map[string]any{
				"apiVersion": owner["apiVersion"], "kind": kind, "name": ownerName, "uid": "0b1c9f6e-0000-4000-8000-000000000001",
				"controller": true, "blockOwnerDeletion": true,
			}},
		},
		"spec": helmtest.Get(owner, "spec", "template", "spec"),
	}
}

// hostNodeAgents are an AKS cluster's own node agents and a Calico
// cluster's Typha, with what the policies judge (namespace, kind, image,
// host access, privileges, tolerations) as upstream writes them:
//   - csi-azuredisk-node: kubernetes-sigs/azuredisk-csi-driver
//     deploy/csi-azuredisk-node.yaml (kube-system, hostNetwork, privileged
//     azuredisk container, tolerates every taint);
//   - azure-cns: Azure/azure-container-networking cns/azure-cns.yaml
//     (kube-system, hostNetwork, hostPath volumes, tolerates every
//     NoSchedule and NoExecute taint);
//   - calico-typha: tigera/operator pkg/render/typha.go (a Deployment in
//     calico-system, hostNetwork, TolerateAll from
//     pkg/render/common/meta/meta.go).
func hostNodeAgents() []map[string]any {
	exists := map[string]any{"operator": "Exists"}
	hostPath := func(name, path string) map[string]any {
		return map[string]any{"name": name, "hostPath": map[string]any{"path": path}}
	}
	workload := func(kind, ns, name string, spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": "apps/v1", "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"k8s-app": name}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"k8s-app": name}}, "spec": spec}}}
	}
	return []map[string]any{
		workload("DaemonSet", "kube-system", "csi-azuredisk-node", map[string]any{
			"hostNetwork": true, "priorityClassName": "system-node-critical", "serviceAccountName": "csi-azuredisk-node-sa",
			"tolerations": []any{exists},
			"containers": []any{
				map[string]any{"name": "node-driver-registrar", "image": "mcr.microsoft.com/oss/kubernetes-csi/csi-node-driver-registrar:v2.2.0",
					"volumeMounts": []any{map[string]any{"name": "registration-dir", "mountPath": "/registration"}}},
				map[string]any{"name": "azuredisk", "image": "mcr.microsoft.com/k8s/csi/azuredisk-csi:v1.33.0",
					"securityContext": map[string]any{"privileged": true},
					"volumeMounts": []any{map[string]any{"name": "mountpoint-dir", "mountPath": "/var/lib/kubelet/", "mountPropagation": "Bidirectional"},
						map[string]any{"name": "device-dir", "mountPath": "/dev"}}},
			},
			"volumes": []any{hostPath("registration-dir", "/var/lib/kubelet/plugins_registry/"),
				hostPath("mountpoint-dir", "/var/lib/kubelet/"), hostPath("device-dir", "/dev")},
		}),
		workload("DaemonSet", "kube-system", "azure-cns", map[string]any{
			"hostNetwork": true, "priorityClassName": "system-node-critical", "serviceAccountName": "azure-cns",
			"tolerations": []any{map[string]any{"key": "CriticalAddonsOnly", "operator": "Exists"},
				map[string]any{"operator": "Exists", "effect": "NoExecute"}, map[string]any{"operator": "Exists", "effect": "NoSchedule"}},
			"containers": []any{map[string]any{"name": "cns-container", "image": "mcr.microsoft.com/containernetworking/azure-cns:v1.4.7",
				"volumeMounts": []any{map[string]any{"name": "cni-bin", "mountPath": "/opt/cni/bin"}}}},
			"volumes": []any{hostPath("cni-bin", "/opt/cni/bin")},
		}),
		workload("Deployment", "calico-system", "calico-typha", map[string]any{
			"hostNetwork": true, "priorityClassName": "system-cluster-critical", "serviceAccountName": "calico-typha",
			"tolerations": []any{exists},
			"containers": []any{map[string]any{"name": "calico-typha", "image": "quay.io/calico/typha:v3.30.0",
				"securityContext": map[string]any{"runAsNonRoot": true, "allowPrivilegeEscalation": false,
					"capabilities": map[string]any{"drop": []any{"ALL"}}, "seccompProfile": map[string]any{"type": "RuntimeDefault"}}}},
		}),
	}
}

// acmeSolver is the HTTP-01 solver pod cert-manager creates for a
// Challenge in the Ingress's namespace, as buildDefaultPod in
// pkg/issuer/acme/http/pod.go at cert-manager v1.21.1 builds it (default
// image, labels, owner).
func acmeSolver(namespace string) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{
			"name": "cm-acme-http-solver-x7k2q", "namespace": namespace,
			"labels": map[string]any{
				"acme.cert-manager.io/http-domain": "1034547531", "acme.cert-manager.io/http-token": "1158401213",
				"acme.cert-manager.io/http01-solver": "true",
			},
			"annotations": map[string]any{"sidecar.istio.io/inject": "false", "cluster-autoscaler.kubernetes.io/safe-to-evict": "true"},
			"ownerReferences": []any{map[string]any{
				"apiVersion": "acme.cert-manager.io/v1", "kind": "Challenge", "name": "model-llama3-70b-tls-1-2836540071-0",
				"uid": "0b1c9f6e-0000-4000-8000-000000000002", "controller": true, "blockOwnerDeletion": true,
			}},
		},
		"spec": map[string]any{
			"automountServiceAccountToken": false, "enableServiceLinks": false, "restartPolicy": "OnFailure",
			"nodeSelector":    map[string]any{"kubernetes.io/os": "linux"},
			"securityContext": map[string]any{"runAsNonRoot": true, "seccompProfile": map[string]any{"type": "RuntimeDefault"}},
			"containers": []any{map[string]any{
				"name": "acmesolver", "image": "quay.io/jetstack/cert-manager-acmesolver:v1.21.1",
				"args": []any{"--listen-port=8089", "--domain=llama70b.acme.example", "--token=abc", "--key=abc.def"},
				"resources": map[string]any{
					"requests": map[string]any{"cpu": "10m", "memory": "64Mi"},
					"limits":   map[string]any{"cpu": "100m", "memory": "64Mi"},
				},
				"ports": []any{map[string]any{"name": "http", "containerPort": 8089}},
				"securityContext": map[string]any{"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false,
					"capabilities": map[string]any{"drop": []any{"ALL"}}},
			}},
		},
	}
}

// An add-on never breaks the host: what every customer platform already
// runs passes the prod stack's policies (Enforce) in the real Kyverno
// engine, rendered from the real charts: kube-prometheus-stack's
// node-exporter (quay.io, tolerates every taint), Grafana Alloy as a log
// collector DaemonSet that tolerates every taint, both as DaemonSets and
// as the pods they create, cert-manager's HTTP-01 solver pod, which
// cert-manager runs in the models namespace for a model's TLS certificate,
// and the node agents of AKS (disk CSI, Azure CNI's CNS) and Calico's
// Typha with their pods: each of them, on its next reschedule after the
// policies went from Audit to Enforce, is admitted.
func TestCustomerPlatformPassesOurPolicies(t *testing.T) {
	t.Parallel()
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	m, _ := runStack(t, "prod")
	var policies []map[string]any
	for _, r := range m.Resources() {
		if r.Type == "kubernetes:kyverno.io/v1:ClusterPolicy" {
			p := plainInputs(r.Inputs)
			if got := helmtest.Get(p, "spec", "rules").([]any)[0].(map[string]any)["validate"]; got != nil &&
				helmtest.Get(got, "failureAction") != "Enforce" {
				t.Fatalf("prod enforces its policies, %v says %v", helmtest.Get(p, "metadata", "name"), helmtest.Get(got, "failureAction"))
			}
			policies = append(policies, p)
		}
	}
	nodeExporter := helmtest.RenderSubchart(t, filepath.Join(charts, "vllm-stack-0.1.12.tgz"),
		[]string{"kube-prometheus-stack", "prometheus-node-exporter"}, "kube-prometheus-stack", "monitoring", map[string]any{})
	alloy := helmtest.RenderChart(t, filepath.Join(charts, "alloy-1.11.1.tgz"), "alloy-logs", "logging", map[string]any{
		"controller": map[string]any{"type": "daemonset", "tolerations": []any{map[string]any{"operator": "Exists"}}},
		// reading the host's journal and container logs takes privileges
		"alloy": map[string]any{"securityContext": map[string]any{"privileged": true}},
	}, false)
	var objects []map[string]any
	for _, o := range append(nodeExporter, alloy...) {
		if o["kind"] == "DaemonSet" {
			if o["metadata"].(map[string]any)["namespace"] == nil {
				o["metadata"].(map[string]any)["namespace"] = map[bool]string{true: "monitoring", false: "logging"}[strings.Contains(helmtest.Get(o, "metadata", "name").(string), "node-exporter")]
			}
			objects = append(objects, o, podOf(o, helmtest.Get(o, "metadata", "name").(string)+"-x1y2z"))
		}
	}
	if len(objects) != 4 {
		t.Fatalf("want node-exporter's and Alloy's DaemonSets and pods, got %d objects", len(objects))
	}
	for _, o := range objects {
		if !strings.Contains(fmt.Sprint(helmtest.Get(o, "spec")), "operator:Exists") {
			t.Fatalf("%s %s does not tolerate every taint: the test would prove nothing", o["kind"], helmtest.Get(o, "metadata", "name"))
		}
		if helmtest.Get(o, "metadata", "name") == "alloy-logs" && !strings.Contains(fmt.Sprint(helmtest.Get(o, "spec")), "privileged:true") {
			t.Fatal("Alloy is not privileged: the privileged rule would not be exercised")
		}
	}
	objects = append(objects, acmeSolver("models"))
	for _, o := range hostNodeAgents() {
		objects = append(objects, o, podOf(o, helmtest.Get(o, "metadata", "name").(string)+"-q8w4e"))
	}
	out := kyvernotest.Apply(t, policies, objects)
	if f := out.Verdicts.Failures(); len(f) > 0 {
		t.Errorf("the customer's own platform fails the prod policies:\n%s", strings.Join(f, "\n"))
	}
	t.Logf("%d objects, %d with verdicts: %v", len(objects), len(out.Verdicts), out.Verdicts)
}
