package gpustack_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/testkit/gpustack"
	"github.com/natron/gpu-node-pools/internal/testkit/helmtest"
	"github.com/natron/gpu-node-pools/internal/testkit/kubeapi"
	"github.com/natron/gpu-node-pools/internal/testkit/nodesim"
	"github.com/natron/gpu-node-pools/internal/testkit/proc"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

func TestMain(m *testing.M) { proc.Main(m) }

// pool is one H100 pool of two-GPU hosts.
func pool() gpupool.Resolved {
	sku := catalog.SKU{Name: "h100-x2", VCPUs: 32, MemoryGiB: 256, GPUs: 2, GPU: catalog.GPU{Label: "h100-80gb", Model: "NVIDIA H100 80GB HBM3", MemoryGB: 80, ComputeCapability: 90}}
	return gpupool.Resolve(gpupool.Spec{Name: "infer", MaxNodes: 1}, sku, nil)
}

// The stand-ins start from nothing and each acts only once its upstream
// would: a GPU node joins with no GPUs; a ClusterPolicy alone, or the
// operator alone, makes no RuntimeClass; NFD labels nothing until its
// worker runs on the node; the operator's device plugin advertises the
// GPUs only once its pod runs there, which needs NFD's labels and the
// operator's. Each step checks the one before made nothing early.
func TestStandInsWaitForTheirUpstream(t *testing.T) {
	t.Parallel()
	srv, stack := start(t)
	node := "node/" + nodesim.GPUNodeName("infer", 0)
	capacity := func() string {
		return srv.Kubectl(t, "get", node, "-o", `jsonpath={.status.capacity.nvidia\.com/gpu}`)
	}
	quiet := func(what string, acted ...string) {
		t.Helper()
		time.Sleep(3 * time.Second) // six passes of the stand-ins
		for _, a := range acted {
			if stack.Acted(a) {
				t.Errorf("%s: the %s stand-in acted", what, a)
			}
		}
		if c := capacity(); c != "" {
			t.Errorf("%s: the node advertises %s GPUs", what, c)
		}
	}
	quiet("a joining node alone", "nfd", "runtime-class", "operator-labels", "operands", "device-plugin", "gfd")

	srv.Create(t, clusterPolicy(t, true))
	quiet("a ClusterPolicy without its operator", "runtime-class", "operands", "device-plugin")
	if out, _ := srv.TryKubectl("get", "runtimeclass", "nvidia"); !strings.Contains(out, "NotFound") {
		t.Errorf("a RuntimeClass exists before the operator runs: %s", out)
	}

	srv.Create(t, deployment("gpu-operator", map[string]any{"app.kubernetes.io/component": "gpu-operator"}))
	eventually(t, "the operator made its RuntimeClass", func() bool { _, err := srv.TryKubectl("get", "runtimeclass", "nvidia"); return err == nil })
	quiet("the operator on a node NFD has not labelled", "nfd", "device-plugin")
	if l := srv.Kubectl(t, "get", node, "-o", `jsonpath={.metadata.labels.nvidia\.com/gpu\.deploy\.device-plugin}`); l != "" {
		t.Errorf("the operator deploys the device plugin on a node without NFD's labels: %q", l)
	}

	srv.Create(t, deployment("nfd-master", map[string]any{"app.kubernetes.io/name": "node-feature-discovery", "role": "master"}),
		daemonSet("nfd-worker", map[string]any{"app.kubernetes.io/name": "node-feature-discovery", "role": "worker"}))
	eventually(t, "the device plugin advertised the node's GPUs", func() bool { return capacity() == "2" })
	for _, a := range []string{"nfd", "operator-labels", "operands", "device-plugin", "gfd"} {
		eventually(t, "the "+a+" stand-in acted with its preconditions met", func() bool { return stack.Acted(a) })
	}
}

// Without the GPU taint among the ClusterPolicy's tolerations the
// operator's device plugin never runs on a GPU node, and the node never
// advertises a GPU: the stand-in is as strict as the scheduler.
func TestDevicePluginNeedsItsPodOnTheNode(t *testing.T) {
	t.Parallel()
	srv, stack := start(t)
	srv.Create(t, clusterPolicy(t, false),
		deployment("gpu-operator", map[string]any{"app.kubernetes.io/component": "gpu-operator"}),
		deployment("nfd-master", map[string]any{"app.kubernetes.io/name": "node-feature-discovery", "role": "master"}),
		daemonSet("nfd-worker", map[string]any{"app.kubernetes.io/name": "node-feature-discovery", "role": "worker"}))
	eventually(t, "the operator made its device plugin DaemonSet", func() bool { return stack.Acted("operands") })
	time.Sleep(5 * time.Second)
	if c := srv.Kubectl(t, "get", "node/"+nodesim.GPUNodeName("infer", 0), "-o", `jsonpath={.status.capacity.nvidia\.com/gpu}`); c != "" || stack.Acted("device-plugin") {
		t.Errorf("the node advertises %q GPUs with no device plugin pod able to run there", c)
	}
}

// clusterPolicy is the gpu-operator chart's ClusterPolicy with its
// default values (they tolerate the GPU taint), or with no tolerations.
func clusterPolicy(t *testing.T, tolerate bool) map[string]any {
	t.Helper()
	for _, o := range helmtest.RenderChart(t, chart(t), "gpu-operator", "gpu", nil, false) {
		if o["kind"] == "ClusterPolicy" {
			if !tolerate {
				helmtest.Get(o, "spec", "daemonsets").(map[string]any)["tolerations"] = []any{}
			}
			return o
		}
	}
	t.Fatal("the gpu-operator chart renders no ClusterPolicy")
	return nil
}

func chart(t *testing.T) string {
	return filepath.Join(pulumitest.SharedDir(t), "charts", "gpu-operator-v26.7.0.tgz")
}

// start is a simulated cluster with the ClusterPolicy CRD, one joining
// GPU node, the GPU stack's privileged namespace and the stand-ins.
func start(t *testing.T) (*kubeapi.Server, *gpustack.Stack) {
	t.Helper()
	srv := kubeapi.StartCluster(t)
	srv.ApplyCRDs(t, helmtest.CRDFile(t, chart(t)))
	p := pool()
	srv.Create(t, nodesim.JoiningGPUNode(p, 0), map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "gpu",
		"labels": map[string]any{"pod-security.kubernetes.io/enforce": "privileged"}}})
	stack := gpustack.Start(t, srv, gpustack.Hardware{Pools: []gpupool.Resolved{p}})
	return srv, stack
}

// deployment and daemonSet are the upstream's workloads as far as the
// stand-ins read them: their pods' labels, tolerating the GPU taint.
func deployment(name string, labels map[string]any) map[string]any {
	return workload("Deployment", name, labels)
}

func daemonSet(name string, labels map[string]any) map[string]any {
	return workload("DaemonSet", name, labels)
}

func workload(kind, name string, labels map[string]any) map[string]any {
	return map[string]any{"apiVersion": "apps/v1", "kind": kind, "metadata": map[string]any{"name": name, "namespace": "gpu"},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": labels}, "template": map[string]any{
			"metadata": map[string]any{"labels": labels}, "spec": map[string]any{
				"tolerations": []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}},
				"containers":  []any{map[string]any{"name": name, "image": "example/" + name}}}}}}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("after a minute: not %s", what)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
