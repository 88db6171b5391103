package gpustack

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/natron/gpu-node-pools/internal/testkit/nodesim"
)

// Pod labels by which the stand-ins know the upstream pods.
var (
	// node-feature-discovery's chart (v0.19.0, templates/master.yaml and
	// worker.yaml, the gpu-operator chart's subchart or the cluster's own).
	nfdMaster = map[string]string{"app.kubernetes.io/name": "node-feature-discovery", "role": "master"}
	nfdWorker = map[string]string{"app.kubernetes.io/name": "node-feature-discovery", "role": "worker"}
	// gpu-operator chart v26.7.0 templates/operator.yaml.
	operatorPod = map[string]string{"app.kubernetes.io/component": "gpu-operator"}
	// The device plugin chart's DaemonSet (nvidia-device-plugin 0.20.0
	// templates/_helpers.tpl selectorLabels).
	chartPlugin = map[string]string{"app.kubernetes.io/name": "nvidia-device-plugin"}
)

// operand is one of the operator's operand DaemonSets the stand-in makes:
// its name (its pods are labelled app=<name>, assets/state-device-plugin
// and gpu-feature-discovery 0500_daemonset.yaml at v26.7.0) and the
// ClusterPolicy field whose enabled: false leaves it out.
type operand struct{ name, field string }

var (
	devicePluginOperand = operand{"nvidia-device-plugin-daemonset", "devicePlugin"}
	gfdOperand          = operand{"gpu-feature-discovery", "gfd"}
	operands            = []operand{devicePluginOperand, gfdOperand}
)

func (o operand) pods() map[string]string { return map[string]string{"app": o.name} }

// Operands are the names of the operand DaemonSets the GPU operator
// stand-in makes.
func Operands() []string {
	var out []string
	for _, o := range operands {
		out = append(out, o.name)
	}
	return out
}

// nfd is node-feature-discovery (v0.19.0): nfd-worker reads a host's PCI
// devices and publishes them in a NodeFeature object
// (pkg/nfd-worker/nfd-worker.go), and nfd-master turns that into the
// node's labels (pkg/nfd-master/nfd-master.go): a node is labelled only
// while a worker runs on it and a master runs somewhere, with the pci
// source's default config (nodesim.NFDPCILabels).
func (s *Stack) nfd(ctx context.Context, nodes []corev1.Node, pods []corev1.Pod) {
	if masters, _ := running(pods, nfdMaster); len(masters) == 0 {
		return
	}
	workers, _ := running(pods, nfdWorker)
	for i := range nodes {
		n := &nodes[i]
		p, ok := s.pool(n)
		if !ok || !workers[n.Name] {
			continue
		}
		s.label(ctx, n, nodesim.NFDPCILabels(nodesim.NFDDefaultConfig(), nodesim.HostDevices(p.SKU)))
		s.did("nfd")
	}
}

// operator is the GPU operator (v26.7.0) reconciling its ClusterPolicy:
// nothing until its own pod runs and a ClusterPolicy exists
// (controllers/clusterpolicy_controller.go Reconcile); then, in the order
// of its states (controllers/state_manager.go init):
//   - pre-requisites: the RuntimeClass named by spec.operator.runtimeClass,
//     default "nvidia", with that handler, owned by the ClusterPolicy
//     (assets/pre-requisites/0200_runtime_class.yaml; object_controls.go
//     transformRuntimeClass, getRuntimeClassName);
//   - node labels: nvidia.com/gpu.present and the operands' deploy labels
//     from NFD's PCI labels (nodesim.OperatorLabels);
//   - the device plugin and GPU feature discovery DaemonSets, unless
//     disabled in the ClusterPolicy, selecting their deploy labels, with
//     the ClusterPolicy's daemonsets tolerations and priority class
//     (applyCommonDaemonsetConfig) and its RuntimeClass
//     (setRuntimeClassName).
func (s *Stack) operator(ctx context.Context, nodes []corev1.Node, pods []corev1.Pod) {
	ops, ns := running(pods, operatorPod)
	if len(ops) == 0 {
		return
	}
	cp, ok := s.clusterPolicy(ctx)
	if !ok {
		return
	}
	rc, _, _ := unstructured.NestedString(cp.Object, "spec", "operator", "runtimeClass")
	if rc == "" {
		rc = "nvidia"
	}
	if createRuntimeClass(ctx, s.kube, rc, cp) != nil {
		return
	}
	s.did("runtime-class")
	for i := range nodes {
		if s.setLabels(ctx, &nodes[i], nodesim.OperatorLabels(nodes[i].Labels)) {
			s.did("operator-labels")
		}
	}
	for _, o := range operands {
		if on, found, _ := unstructured.NestedBool(cp.Object, "spec", o.field, "enabled"); found && !on {
			continue
		}
		if createDaemonSet(ctx, s.kube, o.daemonSet(cp, ns, rc)) == nil {
			s.did("operands")
		}
	}
}

// daemonSet is the operand's DaemonSet, as far as the scheduler reads it:
// its asset's node selector (nodesim.OperandSelectors).
func (o operand) daemonSet(cp *unstructured.Unstructured, ns, rc string) *appsv1.DaemonSet {
	labels := o.pods()
	var tolerations []corev1.Toleration
	if raw, found, _ := unstructured.NestedSlice(cp.Object, "spec", "daemonsets", "tolerations"); found {
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &tolerations)
	}
	priority, _, _ := unstructured.NestedString(cp.Object, "spec", "daemonsets", "priorityClassName")
	if priority == "" {
		priority = "system-node-critical"
	}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: o.name, Namespace: ns, Labels: labels, OwnerReferences: []metav1.OwnerReference{ownerRef(cp)}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:      map[string]string{nodesim.OperandSelectors[o.name]: "true"},
					Tolerations:       tolerations,
					PriorityClassName: priority,
					RuntimeClassName:  &rc,
					Containers:        []corev1.Container{{Name: o.name, Image: "nvcr.io/nvidia/" + o.name}},
				},
			},
		},
	}
}

// devicePlugin is the NVIDIA device plugin (k8s-device-plugin v0.20.0):
// once its pod runs on a node it registers its resources with that node's
// kubelet (internal/plugin/server.go Serve and Register), whose device
// manager then reports them in the node's capacity and allocatable
// (kubelet pkg/kubelet/cm/devicemanager/manager.go GetCapacity, v1.37.2);
// what it advertises follows its config (nodesim.DevicePlugin). A node
// without a running plugin pod advertises no GPU.
func (s *Stack) devicePlugin(ctx context.Context, nodes []corev1.Node, pods []corev1.Pod) {
	fromOperator, _ := running(pods, devicePluginOperand.pods())
	fromChart, _ := running(pods, chartPlugin)
	for i := range nodes {
		n := &nodes[i]
		p, ok := s.pool(n)
		if !ok || !(fromOperator[n.Name] || fromChart[n.Name]) {
			continue
		}
		want := map[string]any{}
		for res, count := range s.advertised(p, n) {
			if q, has := n.Status.Capacity[corev1.ResourceName(res)]; !has || q.Cmp(resource.MustParse(fmt.Sprint(count))) != 0 {
				want[res] = fmt.Sprint(count)
			}
		}
		if len(want) == 0 {
			continue
		}
		patch, _ := json.Marshal(map[string]any{"status": map[string]any{"capacity": want, "allocatable": want}})
		if _, err := s.kube.CoreV1().Nodes().PatchStatus(ctx, n.Name, patch); err == nil {
			s.did("device-plugin")
		}
	}
}

// gfd is GPU feature discovery (k8s-device-plugin v0.20.0
// internal/lm/resource.go): once its pod runs on a node it labels the
// node with the GPUs' product, count, memory and architecture
// (nodesim.GFDLabels).
func (s *Stack) gfd(ctx context.Context, nodes []corev1.Node, pods []corev1.Pod) {
	on, _ := running(pods, gfdOperand.pods())
	for i := range nodes {
		n := &nodes[i]
		if p, ok := s.pool(n); ok && on[n.Name] && s.label(ctx, n, nodesim.GFDLabels(p.Facts)) {
			s.did("gfd")
		}
	}
}
