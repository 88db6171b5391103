package tests

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/components/gpupool"
	"github.com/natron/gpu-node-pools/components/helm"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/kubeapi"
	"github.com/natron/gpu-node-pools/internal/testkit/nodesim"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// workloadsOf are the pod-making objects of a plan's model serving, from
// the program's own mapping functions and the real charts: each model's
// engine Deployment, its weight download Job, a run of each batch job, and
// what they need to be admitted (priorities, the download's service
// account, weight claims bound to static volumes, the runtime class).
func workloadsOf(t *testing.T, p *plan.Plan) []map[string]any {
	t.Helper()
	sp := p.Serving
	ns := sp.Options.Namespace
	objs := []map[string]any{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}},
		{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": serving.DownloadServiceAccount, "namespace": ns}},
	}
	for _, pc := range serving.PriorityClasses {
		objs = append(objs, map[string]any{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
			"metadata": map[string]any{"name": pc.Name}, "value": pc.Value, "preemptionPolicy": pc.Preemption})
	}
	if rc := p.Platform.RuntimeClass(); rc != "" { // the GPU operator's
		objs = append(objs, map[string]any{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": map[string]any{"name": rc}, "handler": rc})
	}
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	for _, e := range sp.Engines {
		size := fmt.Sprintf("%dGi", serving.WeightsClaimGi(e.Weights()))
		// no provisioner runs here: a static volume for each claim
		objs = append(objs,
			map[string]any{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": map[string]any{"name": "pv-" + e.Name},
				"spec": map[string]any{"capacity": map[string]any{"storage": size}, "accessModes": []any{"ReadWriteMany"},
					"storageClassName": sp.Options.StorageClass, "nfs": map[string]any{"server": "10.0.0.9", "path": "/" + e.Name}}},
			map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": serving.WeightsClaim(e.Name), "namespace": ns},
				"spec": map[string]any{"accessModes": []any{"ReadWriteMany"}, "storageClassName": sp.Options.StorageClass,
					"resources": map[string]any{"requests": map[string]any{"storage": size}}}},
			serving.DownloadJob(ns, e, *sp.Storage))
		rel := helm.Release{Name: serving.Release(e.Name), Chart: serving.VLLMStackChart, Values: serving.VLLMValues(e)}
		for _, o := range helmtest.RenderRelease(t, charts, rel, ns) {
			if o["kind"] == "Deployment" {
				objs = append(objs, o)
			}
		}
	}
	for _, j := range sp.Jobs {
		cron := serving.CronJob(ns, j)
		objs = append(objs, map[string]any{"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": j.Name + "-run", "namespace": ns, "labels": map[string]any{"gpu-node-pools/batch": j.Name}},
			"spec":     helmtest.Get(cron, "spec", "jobTemplate", "spec")})
	}
	return objs
}

// platformWorkloads are what a customer's platform and our operators run
// beside the models, rendered from the real charts: KEDA and its HTTP
// add-on, node-exporter (tolerates every taint, as host agents do) and a
// CPU-only Ollama Deployment standing in for the customer's own services.
func platformWorkloads(t *testing.T) []map[string]any {
	t.Helper()
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	objs := []map[string]any{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "keda"}},
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "monitoring"}},
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "apps"}},
	}
	var rendered []map[string]any
	rendered = append(rendered, helmtest.RenderChart(t, serving.KEDAChart.Archive(charts), "keda", "keda", map[string]any{}, false)...)
	rendered = append(rendered, helmtest.RenderChart(t, serving.HTTPAddOnChart.Archive(charts), "keda-add-ons-http", "keda", map[string]any{}, false)...)
	rendered = append(rendered, helmtest.RenderSubchart(t, filepath.Join(charts, "vllm-stack-0.1.12.tgz"),
		[]string{"kube-prometheus-stack", "prometheus-node-exporter"}, "kube-prometheus-stack", "monitoring", map[string]any{})...)
	rendered = append(rendered, helmtest.RenderChart(t, filepath.Join(charts, "ollama-1.77.0.tgz"), "ollama", "apps", map[string]any{}, false)...)
	for _, o := range rendered {
		if k := o["kind"]; k == "Deployment" || k == "DaemonSet" {
			meta := o["metadata"].(map[string]any)
			if meta["namespace"] == nil {
				meta["namespace"] = map[string]string{"keda": "keda", "keda-add-ons-http": "keda", "kube-prometheus-stack": "monitoring", "ollama": "apps"}[helmtest.Get(o, "metadata", "labels", "app.kubernetes.io/instance").(string)]
			}
			// service accounts are not the point here
			delete(helmtest.Get(o, "spec", "template", "spec").(map[string]any), "serviceAccountName")
			objs = append(objs, o)
		}
	}
	return objs
}

// The dev stack's pods on its pools, scheduled by the real kube-scheduler:
// every model server and batch pod on its own pool; nothing that asks for
// no GPU on a GPU node; host agents on every node; and a pod that asks for
// more GPUs than a node has stays Pending with the scheduler's reason.
func TestDevStackSchedules(t *testing.T) {
	t.Parallel()
	cfg := stacktest.Config(t, "dev")
	p, err := plan.Resolve(cfg, "dev")
	if err != nil {
		t.Fatal(err)
	}
	srv := kubeapi.StartCluster(t)

	poolOf := map[string]string{}
	var nodes []map[string]any
	for _, pool := range p.Pools {
		n := nodesim.GPUNode(pool, 0)
		poolOf[n["metadata"].(map[string]any)["name"].(string)] = pool.Spec.Name
		nodes = append(nodes, n)
	}
	nodes = append(nodes, nodesim.CPUNode("platform-0", 16, 64), nodesim.CPUNode("platform-1", 16, 64))
	create(t, srv, nodes...)
	create(t, srv, platformWorkloads(t)...)
	create(t, srv, workloadsOf(t, p)...)

	infer := p.Pools[0].Facts
	tooBig := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "too-big", "namespace": p.Serving.Options.Namespace},
		"spec": map[string]any{
			"tolerations":  []any{map[string]any{"key": gpupool.GPUTaintKey, "operator": "Exists"}},
			"nodeSelector": infer.NodeSelector,
			"containers": []any{map[string]any{"name": "c", "image": "x", "resources": map[string]any{
				"limits": map[string]any{infer.GPUResource: fmt.Sprint(2 * infer.GPUResourcesPerNode)}}}},
		}}
	create(t, srv, tooBig)

	// node-exporter on each node, the rest: engines, downloads, batch
	// runs, KEDA's three and the add-on's three Deployments, Ollama, too-big
	pods := settle(t, srv, len(nodes)+3*len(p.Serving.Engines)+len(p.Serving.Jobs)+8)
	t.Logf("where the dev stack's pods run:\n%s", report(pods, poolOf))

	engines := map[string]string{}
	for _, e := range p.Serving.Engines {
		engines[e.Name] = e.Pool.Name
	}
	jobs := map[string]string{}
	for _, j := range p.Serving.Jobs {
		jobs[j.Name] = j.Pool.Name
	}
	exporters := map[string]bool{}
	for _, pod := range pods {
		id := pod.Namespace + "/" + pod.Name
		switch {
		case pod.Name == "too-big":
			if pod.Node != "" || !strings.Contains(pod.Unschedulable, "Insufficient "+infer.GPUResource) {
				t.Errorf("%s: node %q, scheduler says %q; want Pending for Insufficient %s", id, pod.Node, pod.Unschedulable, infer.GPUResource)
			}
		case strings.Contains(pod.Name, "node-exporter"):
			exporters[pod.Node] = true
		case engines[pod.Labels["model"]] != "" && pod.GPUs:
			if got := poolOf[pod.Node]; got != engines[pod.Labels["model"]] {
				t.Errorf("model server %s runs on %q (pool %q), want pool %s", id, pod.Node, got, engines[pod.Labels["model"]])
			}
		case jobs[strings.TrimSuffix(pod.Labels["batch.kubernetes.io/job-name"], "-run")] != "":
			want := jobs[strings.TrimSuffix(pod.Labels["batch.kubernetes.io/job-name"], "-run")]
			if got := poolOf[pod.Node]; got != want {
				t.Errorf("batch pod %s runs on %q (pool %q), want pool %s", id, pod.Node, got, want)
			}
		case pod.GPUs:
			t.Errorf("unexpected GPU pod %s", id)
		default:
			if pool := poolOf[pod.Node]; pool != "" || pod.Node == "" {
				t.Errorf("%s asks for no GPU but runs on %q (GPU pool %q)", id, pod.Node, pool)
			}
		}
	}
	if len(exporters) != len(nodes) {
		t.Errorf("node-exporter covers %d of %d nodes: %v", len(exporters), len(nodes), exporters)
	}
	// The fit check refuses that pod's config before anything is applied.
	m := p.Serving.Engines[0].Model
	m.TensorParallel = 2 * infer.GPUResourcesPerNode
	if errs := serving.Fit(nil, m, infer); len(errs) == 0 {
		t.Errorf("the fit check accepts tensorParallel %d on %s", m.TensorParallel, infer.Name)
	}
}
