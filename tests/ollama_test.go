package tests

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/components/ollama"

	"github.com/natron/gpu-node-pools/components/policy"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/kubeapi"
	"github.com/natron/gpu-node-pools/internal/testkit/kyvernotest"
	"github.com/natron/gpu-node-pools/internal/testkit/pooltest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

// Ollama's pods pass the dev stack's own policies in the real Kyverno
// engine and meet Pod Security restricted: the dev stack's CPU model as
// the program registers it, and the same model on the dev stack's MIG and
// time-sliced GPU pools, where the GPU rules judge them as GPU pods.
func TestOllamaPodsPassTheStackPolicies(t *testing.T) {
	t.Parallel()
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	m, _ := runStack(t, "dev")
	releases := planReleases(stackPlan(t, "dev"))
	var policies, workloads []map[string]any
	for _, r := range m.Resources() {
		switch {
		case r.Type == "kubernetes:kyverno.io/v1:ClusterPolicy":
			policies = append(policies, plainInputs(r.Inputs))
		case r.Type == chartType && strings.HasSuffix(r.Name, "-llama-dev"):
			workloads = append(workloads, releases.patched(renderRegistered(t, charts, r), r)...)
		case r.Type == "kubernetes:batch/v1:Job" && strings.HasSuffix(r.Name, "-llama-dev-pull"):
			workloads = append(workloads, plainInputs(r.Inputs))
		}
	}
	if len(workloads) != 2 {
		t.Fatalf("the dev stack's Ollama model rendered %d workloads, want its Deployment and its pull Job", len(workloads))
	}
	o := serving.Options{}.Defaults("cephfs", serving.Cilium)
	for _, spec := range []gpupool.Spec{
		{Name: "train", SKU: "a100-80gb-x8", MaxNodes: 2, MIGProfile: "MIG3g"},
		{Name: "notebook", SKU: "a100-80gb-x4", MaxNodes: 2, TimeSlicing: 4},
	} {
		pool := pooltest.Resolved(t, natron.Target{}, spec).Facts
		srv, _ := serving.NewOllamaServer(serving.ModelSpec{Name: "llama-" + spec.Name, Runtime: serving.Ollama, Source: "llama3.1:8b", Pool: spec.Name}, &pool, o, "nvidia")
		if errs := ollama.Fit(nil, srv); len(errs) > 0 {
			t.Fatalf("llama3.1:8b does not fit %s: %v", spec.Name, errs)
		}
		rel := serving.OllamaRelease(helm.Source{}, srv, serving.OllamaChart)
		for _, obj := range rel.Apply(helmtest.RenderRelease(t, charts, rel, o.Namespace)) {
			if obj["kind"] == "Deployment" {
				obj["metadata"].(map[string]any)["namespace"] = o.Namespace
				workloads = append(workloads, obj)
			}
		}
	}
	if len(workloads) != 4 {
		t.Fatalf("%d Ollama workloads, want 3 Deployments and the dev model's pull Job", len(workloads))
	}
	for _, w := range workloads {
		spec := helmtest.Get(w, "spec", "template", "spec").(map[string]any)
		if v, err := podsecurity.Violations(podsecurity.Restricted, spec); err != nil || len(v) > 0 {
			t.Errorf("%s is not restricted: %v %v", helmtest.Get(w, "metadata", "name"), v, err)
		}
	}
	out := kyvernotest.Apply(t, policies, workloads)
	if f := out.Verdicts.Failures(); len(f) > 0 {
		t.Errorf("Ollama's pods fail the stack's policies:\n%s", strings.Join(f, "\n"))
	}
	// the GPU rules judged the GPU placements, and passed them
	for _, name := range []string{"ollama-llama-train", "ollama-llama-notebook"} {
		res := "Deployment/models/" + name
		for _, rule := range []string{policy.RequireResourcesName + "/autogen-" + policy.RuleDeclareResources, policy.GPUTaintName + "/autogen-" + policy.RuleTaintNeedsGPU} {
			if got := out.Verdicts[res][rule]; got != "pass" {
				t.Errorf("%s: %s is %q, want pass (verdicts %v)", res, rule, got, out.Verdicts[res])
			}
		}
	}
	// the images rule judged every Ollama pod in the serving namespace
	judged := 0
	for res, rules := range out.Verdicts {
		if !strings.HasPrefix(res, "Deployment/models/ollama-") {
			continue
		}
		judged++
		if got := rules[policy.AllowedRegistriesName+"/autogen-"+policy.RuleNamespaceRegistries]; got != "pass" {
			t.Errorf("%s: images rule %q", res, got)
		}
	}
	if judged != len(workloads)-1 {
		t.Errorf("Kyverno judged %d Ollama Deployments, want %d", judged, len(workloads)-1)
	}
}

// checkLiveOllama reads the dev stack's Ollama model back from the API
// server the engine applied it to: the pod waits for its pull Job before
// the proxy starts as a native sidecar holding the API key, Ollama listens
// on loopback, and the Service reaches the proxy, never Ollama's own port.
func checkLiveOllama(t *testing.T, srv *kubeapi.Server, model string) {
	t.Helper()
	name := "ollama-" + model
	var d, svc map[string]any
	for obj, into := range map[string]*map[string]any{"deployment": &d, "service": &svc} {
		srv.GetJSON(t, into, obj, name, "-n", "models")
	}
	pod := helmtest.Get(d, "spec", "template", "spec").(map[string]any)
	inits, _ := pod["initContainers"].([]any)
	var names []string
	for _, c := range inits {
		names = append(names, fmt.Sprint(c.(map[string]any)["name"]))
	}
	if got := strings.Join(names, ","); got != "wait-for-model,api-key-proxy" {
		t.Fatalf("init containers %s, want the wait for the pull, then the proxy", got)
	}
	var jobs struct{ Items []any }
	srv.GetJSON(t, &jobs, "jobs", "-n", "models", "-l", "gpu-node-pools/model="+model)
	if len(jobs.Items) != 1 {
		t.Errorf("%d pull Jobs for %s, want one", len(jobs.Items), model)
	}
	for _, c := range pod["containers"].([]any) {
		for _, e := range c.(map[string]any)["env"].([]any) {
			if e := e.(map[string]any); e["name"] == "OLLAMA_HOST" && e["value"] != fmt.Sprintf("127.0.0.1:%d", ollama.Port) {
				t.Errorf("Ollama listens on %v, want loopback", e["value"])
			}
		}
	}
	proxy := inits[1].(map[string]any)
	if proxy["restartPolicy"] != "Always" {
		t.Errorf("the proxy is not a native sidecar: restartPolicy %v", proxy["restartPolicy"])
	}
	keyFrom := ""
	for _, e := range proxy["env"].([]any) {
		if e := e.(map[string]any); e["name"] == ollama.ProxyKeyEnv {
			keyFrom = fmt.Sprint(helmtest.Get(e, "valueFrom", "secretKeyRef", "name"))
		}
	}
	if keyFrom != serving.APIKeySecret {
		t.Errorf("the proxy's key comes from %q, want Secret %s", keyFrom, serving.APIKeySecret)
	}
	claim := ""
	for _, v := range pod["volumes"].([]any) {
		if c, ok := v.(map[string]any)["persistentVolumeClaim"].(map[string]any); ok {
			claim = fmt.Sprint(c["claimName"])
		}
	}
	if claim != name {
		t.Errorf("the models' volume is claim %q, want %q", claim, name)
	}
	ports, _ := helmtest.Get(svc, "spec", "ports").([]any)
	if len(ports) != 1 {
		t.Fatalf("Service %s has ports %v, want one", name, ports)
	}
	if got := helmtest.Get(ports[0], "targetPort"); fmt.Sprint(got) != fmt.Sprint(ollama.ProxyPort) {
		t.Errorf("Service %s targets %v, want the proxy's port %d", name, got, ollama.ProxyPort)
	}
	srv.Kubectl(t, "get", "persistentvolumeclaim", name, "-n", "models")
	if cf := srv.Kubectl(t, "get", "configmap", name+"-proxy", "-n", "models", "-o", "jsonpath={.data.Caddyfile}"); !strings.Contains(cf, "OLLAMA_API_KEY") {
		t.Errorf("the proxy's Caddyfile does not check the key:\n%s", cf)
	}
}
