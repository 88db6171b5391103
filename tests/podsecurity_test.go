package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/kyvernotest"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// checkPodSecurity: the real API server's Pod Security admission (built
// into kube-apiserver) admitted every pod of the simulated stack, in
// namespaces labelled as the program labels them: the pods come from the
// test cluster's real Deployment, ReplicaSet and Job controllers (simulate
// fails on any pod a controller could not create), each CronJob through a
// Job made from its template. cert-manager's HTTP-01 solver pod is
// admitted in the models namespace; a pod without the restricted settings
// is refused there with the server's own message; a batch job that runs
// as root is refused in the restricted batch namespace and admitted where
// the stack lowers it, as the program's validation predicts.
func (s *simulated) checkPodSecurity(t *testing.T, p *plan.Stack) {
	sp := p.Serving
	// Enforced as planned, and the program's pods are there.
	want := map[string]string{p.Platform.Namespace: podsecurity.Privileged}
	for _, n := range sp.Namespaces() {
		want[n.Name] = n.Level
	}
	if want[sp.Options.Namespace] != podsecurity.Restricted || want[sp.Options.BatchNamespace] != podsecurity.Restricted {
		t.Fatalf("the serving and batch namespaces enforce %v, want restricted", want)
	}
	for ns, level := range want {
		var labels map[string]string
		if err := json.Unmarshal([]byte(s.srv.Kubectl(t, "get", "namespace", ns, "-o", "jsonpath={.metadata.labels}")), &labels); err != nil {
			t.Fatal(err)
		}
		if labels["pod-security.kubernetes.io/enforce"] != level {
			t.Errorf("namespace %s enforces %q, want %s", ns, labels["pod-security.kubernetes.io/enforce"], level)
		}
	}
	admitted := map[string]int{}
	for _, pod := range s.pods {
		admitted[pod.Namespace]++
	}
	if admitted[sp.Options.Namespace] < 2*len(sp.Engines) || admitted[sp.Options.BatchNamespace] < len(sp.Jobs) {
		t.Fatalf("pods admitted by namespace %v: want each model's engine and download, each batch run", admitted)
	}
	if sp.InstallsKEDA() && admitted[serving.KEDANamespace] < 3 {
		t.Fatalf("pods admitted by namespace %v: want KEDA's", admitted)
	}

	s.srv.Create(t, acmeSolver(sp.Options.Namespace))

	// The engine's own pod template, stripped of its security contexts,
	// is refused: the labels are live.
	var engine map[string]any
	for _, o := range s.workloads {
		if o["kind"] == "Deployment" {
			engine = o
		}
	}
	bare := stripSecurity(podOf(engine, "engine-without-security"))
	bare["metadata"].(map[string]any)["ownerReferences"] = nil
	out, err := s.srv.TryCreate(t, bare)
	if err == nil || !strings.Contains(out, `violates PodSecurity "restricted:latest"`) {
		t.Errorf("a model server pod without its security contexts: err %v, server said %q; want a PodSecurity refusal", err, out)
	}

	// A root batch job: refused where restricted, admitted where the
	// stack lowers the batch namespace to the level the program's
	// validation says it needs.
	root := int64(0)
	j := sp.Jobs[0]
	j.Security = serving.JobSecurity{RunAsUser: &root}
	need, _, err := j.Security.NeededLevel(j.Name)
	if err != nil || need != podsecurity.Baseline {
		t.Fatalf("a root job needs %s (%v), want baseline", need, err)
	}
	rootPod := func(ns string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "root-run", "namespace": ns},
			"spec": helmtest.Get(serving.CronJob(ns, j), "spec", "jobTemplate", "spec", "template", "spec")}
	}
	out, err = s.srv.TryCreate(t, rootPod(sp.Options.BatchNamespace))
	if err == nil || !strings.Contains(out, "runAsUser=0") {
		t.Errorf("a root batch pod in the restricted batch namespace: err %v, server said %q", err, out)
	}
	s.srv.Create(t, map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "batch-lowered", "labels": kube.AnyMap(podsecurity.Labels(need))}})
	s.srv.Create(t, rootPod("batch-lowered"))
}

// stripSecurity removes a pod's security contexts, pod and containers,
// from a copy (podOf shares its owner's template).
func stripSecurity(pod map[string]any) map[string]any {
	pod = stacktest.DeepCopy(pod)
	spec := pod["spec"].(map[string]any)
	delete(spec, "securityContext")
	containers, _ := spec["containers"].([]any)
	inits, _ := spec["initContainers"].([]any)
	for _, c := range append(containers, inits...) {
		delete(c.(map[string]any), "securityContext")
	}
	return pod
}

// The GPU platform namespace is privileged because what runs there is:
// the device plugin, DCGM exporter and NFD worker mount host paths, which
// baseline refuses (the GPU operator's driver and toolkit DaemonSets,
// created at run time, are privileged containers besides). The admission
// library says so of the program's own charts, rendered.
func TestGPUPlatformNeedsPrivileged(t *testing.T) {
	t.Parallel()
	for _, stack := range []string{"dev", "prod"} {
		p := stackPlan(t, stack)
		gpu, other, _ := gpuStack(t, p)
		needed := podsecurity.Restricted
		for _, d := range append(gpu, other...) {
			if d["kind"] == "Namespace" {
				continue
			}
			need, err := podsecurity.Needs(helmtest.Get(d, "spec", "template", "spec").(map[string]any))
			if err != nil {
				t.Fatal(err)
			}
			if podsecurity.Stricter(needed, need) {
				needed = need
			}
		}
		if got := platform.NamespaceLabels()["pod-security.kubernetes.io/enforce"]; got != needed {
			t.Errorf("%s: the GPU platform namespace enforces %s, its DaemonSets need %s", stack, got, needed)
		}
	}
}

// communityPodSecurity are the Kyverno community's Pod Security Standards
// policies, baseline and restricted (kyverno/policies, pinned in
// ../shared/policies/kyverno-policies), set to Enforce.
func communityPodSecurity(t *testing.T) []map[string]any {
	t.Helper()
	dir := filepath.Join(pulumitest.SharedDir(t), "policies", "kyverno-policies", "pod-security")
	files, err := filepath.Glob(filepath.Join(dir, "*", "*", "*.yaml"))
	if err != nil || len(files) < 15 {
		t.Fatalf("want the baseline and restricted policies under %s, found %d (%v)", dir, len(files), err)
	}
	var out []map[string]any
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var p map[string]any
		if err := yaml.Unmarshal(b, &p); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		p["spec"].(map[string]any)["validationFailureAction"] = "Enforce"
		out = append(out, p)
	}
	return out
}

// The community Pod Security policies (baseline and restricted), judged by
// the real Kyverno CLI, pass every workload the dev and prod stacks render
// outside the GPU platform namespace (model servers, weight downloads,
// batch CronJobs, KEDA and its HTTP add-on) and cert-manager's solver pod.
// The model server's pod stripped of its security contexts fails them:
// the judge can say no.
func TestWorkloadsPassCommunityPodSecurityPolicies(t *testing.T) {
	t.Parallel()
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	pss := communityPodSecurity(t)
	for _, stack := range []string{"dev", "prod"} {
		t.Run(stack, func(t *testing.T) {
			t.Parallel()
			p := stackPlan(t, stack)
			_, registered := registeredWorkloads(t, stack, charts)
			var workloads []map[string]any
			kinds := map[string]int{}
			var control map[string]any
			for _, w := range registered {
				if helmtest.Get(w, "metadata", "namespace") == p.Platform.Namespace {
					continue
				}
				workloads = append(workloads, w)
				kinds[helmtest.Get(w, "metadata", "namespace").(string)+"/"+w["kind"].(string)]++
				if w["kind"] == "Deployment" && helmtest.Get(w, "metadata", "namespace") == p.Serving.Options.Namespace {
					control = stripSecurity(podOf(w, "control-without-security"))
				}
			}
			for _, k := range []string{"models/Deployment", "models/Job", "batch/CronJob"} {
				if kinds[k] == 0 {
					t.Fatalf("no %s among the workloads %v", k, kinds)
				}
			}
			if p.Serving.InstallsKEDA() && kinds["keda/Deployment"] < 3 {
				t.Fatalf("the program installs KEDA, but its Deployments are not among the workloads %v", kinds)
			}
			workloads = append(workloads, acmeSolver(p.Serving.Options.Namespace), control)

			out := kyvernotest.Apply(t, pss, workloads)
			var failures []string
			controlFailed := 0
			for _, f := range out.Verdicts.Failures() {
				if strings.Contains(f, "control-without-security") {
					controlFailed++
				} else {
					failures = append(failures, f)
				}
			}
			if len(failures) > 0 {
				t.Errorf("the %s stack's workloads fail the community Pod Security policies:\n%s", stack, strings.Join(failures, "\n"))
			}
			if controlFailed < 3 {
				t.Errorf("the model server pod without security contexts failed %d rules, want the restricted ones (runAsNonRoot, privilege escalation, capabilities, seccomp): %v",
					controlFailed, out.Verdicts["Pod/"+p.Serving.Options.Namespace+"/control-without-security"])
			}
			evaluated := 0
			for res, rules := range out.Verdicts {
				if strings.HasPrefix(res, "Deployment/models/") && rules["require-run-as-nonroot/autogen-run-as-non-root"] == "pass" {
					evaluated++
				}
			}
			if evaluated == 0 {
				t.Errorf("no model server Deployment was judged by require-run-as-nonroot; verdicts: %v", out.Verdicts)
			}
			t.Logf("%s: %d workloads %v judged by %d policies", stack, len(workloads), kinds, len(pss))
		})
	}
}
