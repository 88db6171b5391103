package tests

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/testkit/gpustack"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/kubeapi"
	"github.com/natron/gpu-node-pools/internal/testkit/nodesim"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
	"github.com/natron/gpu-node-pools/stacks/target/aks"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

// workloadsOf are the pod-making objects of a plan's model serving, from
// the program's own mapping functions and the real charts: each model's
// engine Deployment, its weight download Job, a run of each batch job, and
// what they need to be admitted (priorities, the download's service
// account, weight claims bound to static volumes); the runtime class is
// the GPU operator's, made at run time (gpustack).
func workloadsOf(t *testing.T, p *plan.Stack) []map[string]any {
	t.Helper()
	sp := p.Serving
	ns := sp.Options.Namespace
	var objs []map[string]any
	for _, n := range sp.Namespaces() { // labelled for Pod Security as the program labels them
		objs = append(objs, map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": n.Name, "labels": kube.AnyMap(podsecurity.Labels(n.Level))}})
	}
	objs = append(objs,
		map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": serving.DownloadServiceAccount, "namespace": ns}},
		map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": serving.ModelServerAccount, "namespace": ns},
			"automountServiceAccountToken": false})
	for _, pc := range serving.PriorityClasses {
		objs = append(objs, map[string]any{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
			"metadata": map[string]any{"name": pc.Name}, "value": pc.Value, "preemptionPolicy": pc.Preemption})
	}
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	for _, e := range sp.Engines {
		size := fmt.Sprintf("%dGi", serving.WeightsClaimGi(e.Weights()))
		// no provisioner runs here: a static volume for each claim
		objs = append(objs,
			map[string]any{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": map[string]any{"name": "pv-" + e.Name},
				"spec": map[string]any{"capacity": map[string]any{"storage": size}, "accessModes": []any{"ReadWriteMany"},
					"claimRef":         map[string]any{"namespace": ns, "name": serving.WeightsClaim(e.Name)},
					"storageClassName": sp.Options.StorageClass, "nfs": map[string]any{"server": "10.0.0.9", "path": "/" + e.Name}}},
			map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": serving.WeightsClaim(e.Name), "namespace": ns},
				"spec": map[string]any{"accessModes": []any{"ReadWriteMany"}, "storageClassName": sp.Options.StorageClass,
					"resources": map[string]any{"requests": map[string]any{"storage": size}}}},
			serving.DownloadJob(ns, e, *sp.Storage, sp.Identity))
		rel := serving.EngineRelease(helm.Source{}, e, serving.VLLMStackChart)
		for _, o := range rel.Apply(helmtest.RenderRelease(t, charts, rel, ns)) {
			if o["kind"] == "Deployment" {
				objs = append(objs, o)
			}
		}
	}
	// the gateway of the models that scale from zero, on CPU nodes
	if slices.ContainsFunc(sp.Engines, serving.Engine.ScalesFromZero) {
		objs = append(objs, serving.GatewayDeployment(ns, sp.Engines, sp.Options.ProxyImage))
	}
	for _, j := range sp.Jobs {
		objs = append(objs, jobRun(serving.CronJob(sp.Options.BatchNamespace, j)))
	}
	return objs
}

// jobRun is a Job made from a CronJob's template, as the CronJob
// controller makes one at its schedule.
func jobRun(cron map[string]any) map[string]any {
	meta := cron["metadata"].(map[string]any)
	return map[string]any{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": meta["name"].(string) + "-run", "namespace": meta["namespace"], "labels": meta["labels"]},
		"spec":     helmtest.Get(cron, "spec", "jobTemplate", "spec")}
}

// platformWorkloads are what a customer's platform and our operators run
// beside the models, rendered from the real charts: KEDA and its HTTP
// add-on, node-exporter (tolerates every taint, as host agents do) and a
// CPU-only Ollama Deployment standing in for the customer's own services.
func platformWorkloads(t *testing.T, p *plan.Stack) []map[string]any {
	t.Helper()
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	objs := []map[string]any{
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "monitoring"}},
		{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "apps"}},
	}
	if !p.Serving.InstallsKEDA() { // the customer's own KEDA; else workloadsOf labels ours
		objs = append(objs, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": serving.KEDANamespace}})
	}
	var rendered []map[string]any
	rendered = append(rendered, helmtest.RenderChart(t, serving.KEDAChart.Archive(charts), "keda", "keda", map[string]any{}, false)...)
	rendered = append(rendered, helmtest.RenderChart(t, serving.HTTPAddOnChart.Archive(charts), "keda-add-ons-http", "keda", serving.HTTPAddOnValues(), false)...)
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

// gpuStack is the GPU stack as the program delivers it, rendered from the
// charts with the program's values: its DaemonSets on GPU nodes (the
// device plugin and DCGM exporter charts), its other objects (the GPU
// operator's Deployment, NFD's), and the custom resources it reconciles
// (the ClusterPolicy). What the GPU operator makes at run time (its
// RuntimeClass, operand DaemonSets, node labels) and the GPUs the device
// plugin advertises are the stand-ins' (package gpustack), once these run.
func gpuStack(t *testing.T, p *plan.Stack) (gpu, other, custom []map[string]any) {
	t.Helper()
	charts := filepath.Join(pulumitest.SharedDir(t), "charts")
	ns := p.Platform.Namespace
	other = append(other, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns, "labels": kube.AnyMap(platform.NamespaceLabels())}})
	for _, rel := range platform.Releases(p.Platform, p.Facts(), p.Charts) {
		for _, o := range helmtest.RenderRelease(t, charts, rel, ns) {
			switch o["kind"] {
			case "ClusterPolicy":
				custom = append(custom, o)
			case "DaemonSet":
				if rel.Chart.Name == platform.GPUOperatorChart.Name { // NFD's, a host agent
					other = append(other, o)
				} else {
					gpu = append(gpu, o)
				}
			case "Deployment":
				other = append(other, o)
			}
		}
	}
	for _, o := range append(gpu, other...) {
		if meta := o["metadata"].(map[string]any); meta["namespace"] == nil && o["kind"] != "Namespace" {
			meta["namespace"] = ns
		}
		if spec, ok := helmtest.Get(o, "spec", "template", "spec").(map[string]any); ok {
			delete(spec, "serviceAccountName")
		}
	}
	return gpu, other, custom
}

// devicePlugin is the device plugin's configuration the stack's platform
// registers (the device plugin chart's values, or the GPU operator's).
func devicePlugin(p *plan.Stack) nodesim.DevicePlugin {
	var d nodesim.DevicePlugin
	str := func(v any) string { s, _ := v.(string); return s }
	for _, rel := range platform.Releases(p.Platform, p.Facts(), p.Charts) {
		v := rel.Values
		switch rel.Chart.Name {
		case platform.GPUOperatorChart.Name:
			d.Env, d.Default = str(helmtest.Get(v, "mig", "strategy")), str(helmtest.Get(v, "devicePlugin", "config", "default"))
			d.Configs = stringMap(helmtest.Get(v, "devicePlugin", "config", "data"))
		case platform.DevicePluginChart.Name:
			d.Env, d.Default = str(helmtest.Get(v, "migStrategy")), str(helmtest.Get(v, "config", "default"))
			d.Configs = stringMap(helmtest.Get(v, "config", "map"))
		}
	}
	return d
}

// stackPlan is the plan of one of the project's stack files.
func stackPlan(t *testing.T, stack string) *plan.Stack {
	t.Helper()
	p, err := plan.Resolve(stacktest.Config(t, stack), stack)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// nodesFor is how many nodes the cluster autoscaler would give a pool for
// the stack's pods: the replicas each model starts with (at least one) and
// one run of each batch job on it, at least one node.
func nodesFor(p *plan.Stack, pool gpupool.Facts) int {
	gpus := 0
	for _, e := range p.Serving.Engines {
		if e.Pool.Name == pool.Name {
			gpus += e.TensorParallel * max(e.MinReplicas, 1)
		}
	}
	for _, j := range p.Serving.Jobs {
		if j.Pool.Name == pool.Name {
			gpus += j.GPUs
		}
	}
	return max(1, (gpus+pool.GPUResourcesPerNode-1)/pool.GPUResourcesPerNode)
}

// simulated is a stack's Kubernetes side on a simulated cluster.
type simulated struct {
	srv    *kubeapi.Server
	poolOf map[string]string // node -> pool ("" for a CPU node)
	nodes  []string
	gpuDS  map[string]bool // the GPU stack's DaemonSets by name
	pods   []placement
	// workloads are the stack's own objects it was given (workloadsOf),
	// namespaces aside.
	workloads []map[string]any
}

// simulate starts a cluster with a node per pool (nodesPerPool more where
// given) and two CPU nodes, creates the stack's workloads, the GPU stack's
// DaemonSets and the platform's, plus extra objects, and waits for the
// scheduler; want counts the pods that are not DaemonSet pods.
func simulate(t *testing.T, p *plan.Stack, extra []map[string]any, want int, zero ...string) *simulated {
	t.Helper()
	s := &simulated{srv: kubeapi.StartCluster(t), poolOf: map[string]string{}, gpuDS: map[string]bool{}}
	var nodes []map[string]any
	for _, pool := range p.Pools {
		if slices.Contains(zero, pool.Spec.Name) {
			continue // scaled to zero
		}
		for i := range nodesFor(p, pool.Facts) {
			n := nodesim.JoiningGPUNode(pool, i)
			nodes = append(nodes, n)
			s.poolOf[n["metadata"].(map[string]any)["name"].(string)] = pool.Spec.Name
		}
	}
	nodes = append(nodes, nodesim.CPUNode("platform-0", 16, 64), nodesim.CPUNode("platform-1", 16, 64))
	for _, n := range nodes {
		s.nodes = append(s.nodes, n["metadata"].(map[string]any)["name"].(string))
	}
	s.srv.Create(t, nodes...)
	stack := gpustack.Start(t, s.srv, gpustack.Hardware{Pools: p.Pools, Plugin: devicePlugin(p)})
	gpu, other, custom := gpuStack(t, p)
	for _, d := range gpu {
		s.gpuDS[d["metadata"].(map[string]any)["name"].(string)] = true
	}
	if len(custom) > 0 {
		for _, name := range gpustack.Operands() {
			s.gpuDS[name] = true
		}
		installChartCRDs(t, s.srv, filepath.Base(platform.GPUOperatorChart.Archive(filepath.Join(pulumitest.SharedDir(t), "charts"))))
	}
	platformObjs := platformWorkloads(t, p)
	var namespaces []map[string]any
	for _, o := range workloadsOf(t, p) { // the program's namespaces first: KEDA's may be one
		if o["kind"] == "Namespace" {
			namespaces = append(namespaces, o)
		} else {
			s.workloads = append(s.workloads, o)
		}
	}
	s.srv.Create(t, namespaces...)
	// The GPU stack first, as the delivery orders it: GPU pods are
	// refused without its RuntimeClass and unschedulable without the GPUs
	// its device plugin advertises.
	s.srv.Create(t, append(append(other, gpu...), custom...)...)
	stack.WaitAdvertised(t, 2*time.Minute)
	s.srv.Create(t, platformObjs...)
	s.srv.Create(t, s.workloads...)
	if len(extra) > 0 {
		s.srv.Create(t, extra...)
	}
	daemonPods := 0
	for _, o := range append(append(gpu, other...), platformObjs...) {
		if o["kind"] == "DaemonSet" {
			daemonPods++ // at least one each
		} else if o["kind"] == "Deployment" {
			want++
		}
	}
	if len(custom) > 0 {
		daemonPods += len(gpustack.Operands()) // the operator's, at least one each
	}
	s.pods = settle(t, s.srv, want+daemonPods)
	t.Logf("where the %s stack's pods run:\n%s", p.Target.Name(), report(s.pods, s.poolOf))
	return s
}

// checkPlacements: every model server and batch pod on a node of its own
// pool; no pod that asks for no GPU on a GPU node, except host agents
// (DaemonSets); the GPU stack's DaemonSets on every GPU node and no CPU
// node; node-exporter on every node.
func (s *simulated) checkPlacements(t *testing.T, p *plan.Stack) {
	t.Helper()
	engines, jobs := map[string]string{}, map[string]string{}
	for _, e := range p.Serving.Engines {
		engines[e.Name] = e.Pool.Name
	}
	for _, j := range p.Serving.Jobs {
		jobs[j.Name] = j.Pool.Name
	}
	covered := map[string]map[string]bool{}
	for _, pod := range s.pods {
		id := pod.Namespace + "/" + pod.Name
		ds, isDS := strings.CutPrefix(pod.Owner, "DaemonSet/")
		batch := jobs[strings.TrimSuffix(pod.Labels["batch.kubernetes.io/job-name"], "-run")]
		switch {
		case isDS:
			if covered[ds] == nil {
				covered[ds] = map[string]bool{}
			}
			covered[ds][pod.Node] = true
			if s.gpuDS[ds] && s.poolOf[pod.Node] == "" {
				t.Errorf("GPU DaemonSet pod %s runs on CPU node %q", id, pod.Node)
			}
		case engines[pod.Labels["model"]] != "" && pod.GPUs:
			if got := s.poolOf[pod.Node]; got != engines[pod.Labels["model"]] {
				t.Errorf("model server %s runs on %q (pool %q), want pool %s", id, pod.Node, got, engines[pod.Labels["model"]])
			}
		case batch != "":
			if got := s.poolOf[pod.Node]; got != batch {
				t.Errorf("batch pod %s runs on %q (pool %q), want pool %s", id, pod.Node, got, batch)
			}
		case pod.GPUs:
			// the extra pods of a test: checked there
		default:
			if pool := s.poolOf[pod.Node]; pool != "" || pod.Node == "" {
				t.Errorf("%s asks for no GPU but runs on %q (GPU pool %q)", id, pod.Node, pool)
			}
		}
	}
	for ds := range s.gpuDS {
		if strings.HasSuffix(ds, "-mps-control-daemon") {
			continue // only where MPS sharing is configured (nvidia.com/mps.capable)
		}
		for node, pool := range s.poolOf {
			if pool != "" && !covered[ds][node] {
				t.Errorf("GPU DaemonSet %s has no pod on GPU node %s (pool %s)", ds, node, pool)
			}
		}
	}
	exporter := "kube-prometheus-stack-prometheus-node-exporter"
	if len(covered[exporter]) != len(s.nodes) {
		t.Errorf("node-exporter covers %d of %d nodes: %v", len(covered[exporter]), len(s.nodes), covered[exporter])
	}
}

// tooBig asks for more GPUs than a node of the pool has.
func tooBig(ns string, pool gpupool.Facts) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "too-big", "namespace": ns},
		"spec": map[string]any{
			"tolerations":     []any{map[string]any{"key": gpupool.GPUTaintKey, "operator": "Exists"}},
			"nodeSelector":    pool.NodeSelector,
			"securityContext": podsecurity.PodContext(), // the namespace enforces restricted
			"containers": []any{map[string]any{"name": "c", "image": "x", "securityContext": podsecurity.ContainerContext(true),
				"resources": map[string]any{"limits": map[string]any{pool.GPUResource: fmt.Sprint(2 * pool.GPUResourcesPerNode)}}}},
		}}
}

// The dev stack (bare metal, GPU operator) and the Kubernetes side of the
// prod stack (AKS, device plugin) scheduled by the real kube-scheduler; a
// pod that asks for more GPUs than a node has stays Pending with the
// scheduler's own reason, and the fit check refuses that config.
func TestStacksSchedule(t *testing.T) {
	t.Parallel()
	for _, stack := range []string{"dev", "prod"} {
		t.Run(stack, func(t *testing.T) {
			t.Parallel()
			p := stackPlan(t, stack)
			first := p.Pools[0].Facts
			s := simulate(t, p, []map[string]any{tooBig(p.Serving.Options.Namespace, first)}, 3*len(p.Serving.Engines)+len(p.Serving.Jobs)+1)
			s.checkPlacements(t, p)
			t.Run("pod security", func(t *testing.T) { s.checkPodSecurity(t, p) })
			for _, pod := range s.pods {
				if pod.Name == "too-big" && (pod.Node != "" || !strings.Contains(pod.Unschedulable, "Insufficient "+first.GPUResource)) {
					t.Errorf("too-big: node %q, scheduler says %q; want Pending for Insufficient %s", pod.Node, pod.Unschedulable, first.GPUResource)
				}
			}
			m := p.Serving.Engines[0].Model
			m.TensorParallel = 2 * first.GPUResourcesPerNode
			if errs := fit.Fit(nil, m, first); len(errs) == 0 {
				t.Errorf("the fit check accepts tensorParallel %d on %s", m.TensorParallel, first.Name)
			}
		})
	}
}

// waitFor polls the cluster's pods until ok holds, failing with the table
// after a minute and a half.
func (s *simulated) waitFor(t *testing.T, what string, ok func([]placement) bool) []placement {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		pods := placements(t, s.srv)
		if ok(pods) {
			return pods
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 90 s:\n%s", what, report(pods, s.poolOf))
		}
		time.Sleep(time.Second)
	}
}

// Off-peak batch work fills a pool and a model server scales up (as KEDA
// would; it does not run here): the scheduler preempts batch pods by
// priority class instead of leaving the model Pending, and the batch pods'
// replacements wait, since batch work never preempts.
func TestServingPreemptsBatch(t *testing.T) {
	t.Parallel()
	p := stackPlan(t, "dev")
	e := p.Serving.Engines[0]
	pool := e.Pool
	ns := p.Serving.Options.Namespace
	fill := serving.NewJob(serving.BatchJobSpec{Name: "fill", Pool: pool.Name, Image: "registry.example/fill:1", Schedule: "0 2 * * *",
		GPUs: pool.GPUResourcesPerNode - e.TensorParallel}, pool, p.Platform.RuntimeClass())
	// the batch run's pod as its Job would make it, as a bare Pod: KWOK
	// completes Job pods at once, and this one must keep its GPUs
	batchNS := p.Serving.Options.BatchNamespace
	run := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "fill-run", "namespace": batchNS, "labels": map[string]any{"gpu-node-pools/batch": "fill"}},
		"spec":     helmtest.Get(serving.CronJob(batchNS, fill), "spec", "jobTemplate", "spec", "template", "spec")}
	s := simulate(t, p, []map[string]any{run}, 3*len(p.Serving.Engines)+len(p.Serving.Jobs)+1)
	filled := false
	for _, pod := range s.pods {
		filled = filled || (pod.Name == "fill-run" && pod.Phase == "Running" && s.poolOf[pod.Node] == pool.Name)
	}
	if !filled {
		t.Fatalf("the batch run does not fill pool %s:\n%s", pool.Name, report(s.pods, s.poolOf))
	}

	s.srv.Kubectl(t, "scale", "deployment", serving.DeploymentName(e.Name), "-n", ns, "--replicas", "2")
	pods := s.waitFor(t, "the second model server runs", func(pods []placement) bool {
		running := 0
		for _, pod := range pods {
			if pod.Labels["model"] == e.Name && pod.Phase == "Running" && s.poolOf[pod.Node] == pool.Name {
				running++
			}
		}
		return running == 2
	})
	for _, pod := range pods {
		if pod.Name == "fill-run" && pod.Phase == "Running" {
			t.Errorf("batch pod %s still runs on %s: the model server must have preempted it", pod.Name, pod.Node)
		}
	}
	t.Logf("after the scale-up:\n%s", report(pods, s.poolOf))
}

// templateNode is the node the cluster autoscaler builds for a pool at
// zero nodes from what the program registered: the MachineDeployment's
// capacity annotations on bare metal, the agent pool's VM size, labels and
// taints on AKS (AKS adds its spot taint to spot pools).
func templateNode(t *testing.T, p *plan.Stack, pool gpupool.Resolved) map[string]any {
	t.Helper()
	switch c := p.Cluster.(type) {
	case *natron.Cluster:
		md := natron.Objects(*c, pool).MachineDeployment
		n := nodesim.ClusterAPITemplateNode(md, helmtest.Get(md, "metadata", "name").(string)+"-asg-0")
		if n == nil {
			t.Fatalf("MachineDeployment %v cannot scale from zero: no cpu and memory capacity annotations", helmtest.Get(md, "metadata", "name"))
		}
		return n
	case *aks.Cluster:
		args := aks.AgentPoolArgs(*c, pool)
		labels := map[string]string{}
		for k, v := range args.NodeLabels.(pulumi.StringMap) {
			labels[k] = string(v.(pulumi.String))
		}
		var taints []string
		for _, v := range args.NodeTaints.(pulumi.StringArray) {
			taints = append(taints, string(v.(pulumi.String)))
		}
		if pool.Spec.Spot {
			taints = append(taints, aks.SpotToleration.Key+"="+aks.SpotToleration.Value+":"+aks.SpotToleration.Effect)
		}
		return nodesim.AKSTemplateNode(pool.Spec.Name, pool.SKU, labels, taints, "aks-"+pool.Spec.Name+"-template")
	}
	t.Fatalf("cluster block %T", p.Cluster)
	return nil
}

// A model's pool at zero nodes: its pods stay Pending as Unschedulable;
// the node the autoscaler builds from what the program registered takes
// them.
func TestScaleFromZeroNodes(t *testing.T) {
	t.Parallel()
	for _, stack := range []string{"dev", "prod"} {
		t.Run(stack, func(t *testing.T) {
			t.Parallel()
			p := stackPlan(t, stack)
			e := p.Serving.Engines[len(p.Serving.Engines)-1]
			var pool gpupool.Resolved
			for _, r := range p.Pools {
				if r.Spec.Name == e.Pool.Name {
					pool = r
				}
			}
			s := simulate(t, p, nil, 3*len(p.Serving.Engines)+len(p.Serving.Jobs), pool.Spec.Name)
			isEngine := func(pod placement) bool { return pod.Labels["model"] == e.Name && pod.GPUs }
			for _, pod := range s.pods {
				if isEngine(pod) && (pod.Node != "" || pod.Unschedulable == "") {
					t.Fatalf("model server %s on pool %s at zero nodes: node %q, want Pending as Unschedulable", pod.Name, pool.Spec.Name, pod.Node)
				}
			}
			n := templateNode(t, p, pool)
			name := n["metadata"].(map[string]any)["name"].(string)
			s.poolOf[name] = pool.Spec.Name
			s.srv.Create(t, n)
			pods := s.waitFor(t, "the model server runs on the new node", func(pods []placement) bool {
				for _, pod := range pods {
					if isEngine(pod) && pod.Node == name && pod.Phase == "Running" {
						return true
					}
				}
				return false
			})
			t.Logf("after the scale-up from zero:\n%s", report(pods, s.poolOf))
		})
	}
}

// poolVariations are stacks the stack files do not have, generated from
// the config contract: models on a MIG pool, two models on one
// time-sliced pool, and (on AKS) a model and a batch job on a spot pool.
func poolVariations(t *testing.T, target string) (*plan.Stack, *config.Config) {
	t.Helper()
	c := stacktest.WithServing(stacktest.Natron())
	pools := []any{
		map[string]any{"name": "mig", "sku": "a100-80gb-x8", "minNodes": 0, "maxNodes": 2, "migProfile": "MIG3g"},
		map[string]any{"name": "shared", "sku": "a100-80gb-x4", "minNodes": 0, "maxNodes": 2, "timeSlicing": 4},
	}
	if target == "aks" {
		c = stacktest.WithServing(stacktest.AKS())
		pools = []any{
			map[string]any{"name": "mig", "sku": "Standard_ND96amsr_A100_v4", "minNodes": 0, "maxNodes": 2, "migProfile": "MIG3g"},
			map[string]any{"name": "shared", "sku": "Standard_NC24ads_A100_v4", "minNodes": 0, "maxNodes": 2, "timeSlicing": 4},
			map[string]any{"name": "spot", "sku": "Standard_NC80adis_H100_v5", "minNodes": 0, "maxNodes": 2, "spot": true},
		}
	}
	c["pools"] = pools
	base := stacktest.Model(c)
	var models []any
	for _, m := range [][2]string{{"on-mig", "mig"}, {"shared-a", "shared"}, {"shared-b", "shared"}, {"on-spot", "spot"}} {
		if m[1] == "spot" && target != "aks" {
			continue
		}
		model := stacktest.DeepCopy(map[string]any{"m": base})["m"].(map[string]any)
		model["name"], model["pool"], model["maxReplicas"] = m[0], m[1], 1
		if m[1] == "shared" {
			// a quarter of an A100 holds no 8B model in 16 bits: vLLM
			// would find 18 GiB for 19 (the fit check says so)
			model["parametersB"] = 3
		}
		models = append(models, model)
	}
	c["models"] = models
	batchPool := "shared"
	if target == "aks" {
		batchPool = "spot"
	}
	c["batchJobs"].([]any)[0].(map[string]any)["pool"] = batchPool
	raw := stacktest.Encode(t, c)
	p, err := plan.Load(raw, "variations")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, errs := config.Decode(raw)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return p, cfg
}

// The variations schedule: every model runs on its pool.
func TestPoolVariationsSchedule(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"aks", "natron"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			p, _ := poolVariations(t, target)
			s := simulate(t, p, nil, 3*len(p.Serving.Engines)+len(p.Serving.Jobs))
			s.checkPlacements(t, p)
			running := map[string]bool{}
			for _, pod := range s.pods {
				if pod.GPUs && pod.Phase == "Running" {
					running[pod.Labels["model"]] = true
				}
			}
			for _, e := range p.Serving.Engines {
				if !running[e.Name] {
					t.Errorf("model %s on pool %s does not run", e.Name, e.Pool.Name)
				}
			}
		})
	}
}

// The cross-part invariants hold on the variations too, rendered by the
// program (renderStack checks them).
func TestPoolVariationsKeepTheInvariants(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"aks", "natron"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			_, cfg := poolVariations(t, target)
			if target == "natron" { // its clusters as dev names them
				cfg.GitOps = stacktest.Config(t, "dev").GitOps
			}
			renderStack(t, cfg, "variations", gitops.Flux, "")
		})
	}
}
