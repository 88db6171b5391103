// Package gpustack stands in, on a simulated cluster, for what the GPU
// stack makes at run time: node-feature-discovery's PCI labels, the GPU
// operator's RuntimeClass, node labels and operand DaemonSets, the device
// plugin's GPU capacity and GPU feature discovery's labels. GPU nodes join
// with none of these (nodesim.JoiningGPUNode); each stand-in acts only
// once its upstream's preconditions hold on the cluster (its own pods run
// there, the custom resource it reconciles exists), each rule cited where
// it is encoded. Nothing else in the tests makes these objects
// (TestNoTestMakesWhatAnOperatorMakes).
package gpustack

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/testkit/kubeapi"
	"github.com/natron/gpu-node-pools/internal/testkit/nodesim"
)

// Hardware is what the machines of the simulated cluster are: each GPU
// pool's nodes are hosts of its SKU (what sysfs and NVML would report to
// NFD and the device plugin), and the device plugin's configuration as
// the stack delivers it.
type Hardware struct {
	Pools  []gpupool.Resolved
	Plugin nodesim.DevicePlugin
}

// Stack is the running stand-ins.
type Stack struct {
	hw    Hardware
	kube  kubernetes.Interface
	dyn   dynamic.Interface
	mu    sync.Mutex
	acted map[string]bool // what each stand-in did, for the precondition tests
}

// Start runs the stand-ins against the simulated cluster, twice a second
// as controllers' loops, until the test ends.
func Start(t testing.TB, srv *kubeapi.Server, hw Hardware) *Stack {
	t.Helper()
	cfg := srv.Config(t)
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &Stack{hw: hw, kube: kc, dyn: dc, acted: map[string]bool{}}
	kubeapi.Every(t, 500*time.Millisecond, s.step)
	return s
}

// Acted reports whether a stand-in has acted ("nfd", "runtime-class",
// "operator-labels", "operands", "device-plugin", "gfd").
func (s *Stack) Acted(what string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acted[what]
}

func (s *Stack) did(what string) {
	s.mu.Lock()
	s.acted[what] = true
	s.mu.Unlock()
}

// WaitAdvertised waits until every GPU node of the cluster carries the
// capacity the device plugin advertises there: what a test that schedules
// GPU pods waits for before it judges where they went, as an operator
// waits for the GPU operator's validation.
func (s *Stack) WaitAdvertised(t testing.TB, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		missing := s.unadvertised(context.Background())
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s no device plugin has advertised GPUs on %v: its pods do not run there", limit, missing)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (s *Stack) unadvertised(ctx context.Context) []string {
	nodes, err := s.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, n := range nodes.Items {
		pool, ok := s.pool(&n)
		if !ok {
			continue
		}
		for res := range s.advertised(pool, &n) {
			if _, has := n.Status.Capacity[corev1.ResourceName(res)]; !has {
				out = append(out, n.Name)
				break
			}
		}
	}
	return out
}

// Join adds the hardware of pools whose nodes join later (a pool added
// on day 2).
func (s *Stack) Join(pools ...gpupool.Resolved) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range pools {
		if _, ok := s.poolLocked(p.Spec.Name); !ok {
			s.hw.Pools = append(s.hw.Pools, p)
		}
	}
}

// pool is the GPU pool a node belongs to (its pool label), if any.
func (s *Stack) pool(n *corev1.Node) (gpupool.Resolved, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.poolLocked(n.Labels[gpupool.LabelPool])
}

func (s *Stack) poolLocked(name string) (gpupool.Resolved, bool) {
	for _, p := range s.hw.Pools {
		if name != "" && p.Spec.Name == name {
			return p, true
		}
	}
	return gpupool.Resolved{}, false
}

func (s *Stack) advertised(p gpupool.Resolved, n *corev1.Node) map[string]int {
	slice, _ := p.SKU.GPU.Slice(p.Spec.MIGProfile)
	return s.hw.Plugin.Resources(p.SKU, slice, n.Labels)
}

// step is one pass of every stand-in, in no particular order: each reads
// the cluster afresh and acts only where its preconditions hold.
func (s *Stack) step(ctx context.Context) {
	nodes, err := s.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	pods, err := s.kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	s.nfd(ctx, nodes.Items, pods.Items)
	s.operator(ctx, nodes.Items, pods.Items)
	s.devicePlugin(ctx, nodes.Items, pods.Items)
	s.gfd(ctx, nodes.Items, pods.Items)
}

// running are the nodes where a running pod matching labels is, and the
// namespace of one such pod.
func running(pods []corev1.Pod, set map[string]string) (map[string]bool, string) {
	out, ns := map[string]bool{}, ""
	selector := labels.SelectorFromSet(set)
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Spec.NodeName != "" && selector.Matches(labels.Set(p.Labels)) {
			out[p.Spec.NodeName], ns = true, p.Namespace
		}
	}
	return out, ns
}

// label adds labels to a node where they differ, and reports whether it
// changed the node.
func (s *Stack) label(ctx context.Context, n *corev1.Node, labels map[string]string) bool {
	want := maps.Clone(n.Labels)
	if want == nil {
		want = map[string]string{}
	}
	maps.Copy(want, labels)
	return s.setLabels(ctx, n, want)
}

func (s *Stack) setLabels(ctx context.Context, n *corev1.Node, want map[string]string) bool {
	if maps.Equal(want, n.Labels) {
		return false
	}
	c := n.DeepCopy()
	c.Labels = want
	if _, err := s.kube.CoreV1().Nodes().Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		return false
	}
	n.Labels = want
	return true
}

// clusterPolicy is the GPU operator's ClusterPolicy, if its CRD is served
// and one exists.
func (s *Stack) clusterPolicy(ctx context.Context) (*unstructured.Unstructured, bool) {
	list, err := s.dyn.Resource(schema.GroupVersionResource{Group: "nvidia.com", Version: "v1", Resource: "clusterpolicies"}).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) == 0 {
		return nil, false
	}
	return &list.Items[0], true
}

// createRuntimeClass makes the RuntimeClass unless it exists.
func createRuntimeClass(ctx context.Context, kc kubernetes.Interface, name string, owner *unstructured.Unstructured) error {
	if _, err := kc.NodeV1().RuntimeClasses().Get(ctx, name, metav1.GetOptions{}); err == nil {
		return nil
	}
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{ownerRef(owner)}}, Handler: name}
	_, err := kc.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{})
	return err
}

func ownerRef(o *unstructured.Unstructured) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName(), UID: o.GetUID(), Controller: &yes}
}

func createDaemonSet(ctx context.Context, kc kubernetes.Interface, ds *appsv1.DaemonSet) error {
	if _, err := kc.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{}); err == nil {
		return nil
	}
	_, err := kc.AppsV1().DaemonSets(ds.Namespace).Create(ctx, ds, metav1.CreateOptions{})
	return err
}
