package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/internal/testkit/delivery"
	"github.com/natron/gpu-node-pools/stacks/config"
)

// converged is a first delivery of a stack with tool that converged: the
// render directory, the cluster and the objects delivered.
func converged(t *testing.T, stack, tool string) (string, *delivery.Cluster) {
	t.Helper()
	dir, p := renderFor(t, stack, tool, "")
	c := hostCluster(t, dir, p)
	steps, objs := deliver(t, c, dir, tool)
	if err := delivery.Failed(steps); err != nil {
		t.Fatalf("the first sync did not complete: %v", err)
	}
	requireConverged(t, c, objs)
	if checkProvidedSecrets(t, c, objs) == 0 {
		t.Error("no ExternalSecret gave values that are not secret (the storage Secret's rclone type)")
	}
	return dir, c
}

// checkProvidedSecrets: each Secret the External Secrets Operator made
// for a render holds what the program's own Secret would: the secret keys
// from the store, and the type and the values that are not secret from
// the ExternalSecret's template, which the store does not hold.
// It returns how many had such values.
func checkProvidedSecrets(t *testing.T, c *delivery.Cluster, objs []*unstructured.Unstructured) int {
	t.Helper()
	templated := 0
	for _, o := range objs {
		if o.GetKind() != "ExternalSecret" {
			continue
		}
		var got corev1.Secret
		if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()}, &got); err != nil {
			t.Errorf("ExternalSecret %s/%s: %v", o.GetNamespace(), o.GetName(), err)
			continue
		}
		data, _, _ := unstructured.NestedSlice(o.Object, "spec", "data")
		for _, d := range data {
			k, _ := d.(map[string]any)["secretKey"].(string)
			if v := string(got.Data[k]); v != "sim-"+k {
				t.Errorf("Secret %s/%s: %s = %q, want the store's", got.Namespace, got.Name, k, v)
			}
		}
		values, _, _ := unstructured.NestedStringMap(o.Object, "spec", "target", "template", "data")
		for k, v := range values {
			if string(got.Data[k]) != v {
				t.Errorf("Secret %s/%s: %s = %q, want %q", got.Namespace, got.Name, k, got.Data[k], v)
			}
		}
		if typ, ok, _ := unstructured.NestedString(o.Object, "spec", "target", "template", "type"); ok && string(got.Type) != typ {
			t.Errorf("Secret %s/%s: type %s, want %s", got.Namespace, got.Name, got.Type, typ)
		}
		if len(got.Data) != len(data)+len(values) {
			t.Errorf("Secret %s/%s holds %d keys, want %d", got.Namespace, got.Name, len(got.Data), len(data)+len(values))
		}
		if len(values) > 0 {
			templated++
		}
	}
	return templated
}

func requireConverged(t *testing.T, c *delivery.Cluster, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), convergeLimit+time.Minute)
	defer cancel()
	if problems := c.Converged(ctx, objs, convergeLimit); len(problems) > 0 {
		t.Fatalf("not converged within %s:\n%s", convergeLimit, strings.Join(problems, "\n"))
	}
	requireScraped(ctx, t, c, objs)
}

// requireScraped: each ServiceMonitor delivered makes Prometheus scrape
// the one Service it is for, however the delivery labelled that Service
// (Argo CD's label tracking rewrites app.kubernetes.io/instance): a
// monitor that selects nothing leaves the queue-depth scaling reading 0
// and the GPU alerts silent; one that selects two Services scrapes every
// pod twice.
func requireScraped(ctx context.Context, t *testing.T, c *delivery.Cluster, objs []*unstructured.Unstructured) {
	t.Helper()
	scraped, err := c.ScrapedServices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "ServiceMonitor" {
			if _, live := scraped[o.GetNamespace()+"/"+o.GetName()]; !live {
				t.Errorf("ServiceMonitor %s/%s was delivered but is not in the cluster", o.GetNamespace(), o.GetName())
			}
		}
	}
	for sm, services := range scraped {
		if len(services) != 1 {
			t.Errorf("ServiceMonitor %s makes Prometheus scrape %v, want its one Service", sm, services)
		}
	}
}

// fillGPUs takes every GPU the running pods leave free on every GPU node
// with a pod of another model server: the pools have no spare GPU.
func fillGPUs(t *testing.T, c *delivery.Cluster) int {
	t.Helper()
	ctx := context.Background()
	var nodes corev1.NodeList
	var pods corev1.PodList
	if err := c.Client.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	filled := 0
	for _, n := range nodes.Items {
		for res, q := range n.Status.Allocatable {
			if !strings.HasPrefix(string(res), "nvidia.com/") {
				continue
			}
			free := q.Value()
			// At the priority of the highest pod there (the model
			// servers'): the scheduler would preempt a lower one for the
			// surge pod, and the pool would not be full.
			priority, class := int32(0), ""
			for _, p := range pods.Items {
				if p.Spec.NodeName == n.Name && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
					if p.Spec.Priority != nil && *p.Spec.Priority > priority {
						priority, class = *p.Spec.Priority, p.Spec.PriorityClassName
					}
					for _, ctr := range p.Spec.Containers {
						free -= ctr.Resources.Requests.Name(res, resource.DecimalSI).Value()
					}
				}
			}
			if free <= 0 {
				continue
			}
			gpus := corev1.ResourceList{res: *resource.NewQuantity(free, resource.DecimalSI)}
			filler := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("other-model-%s-%d", n.Name, filled), Namespace: "default"},
				Spec: corev1.PodSpec{NodeName: n.Name, Containers: []corev1.Container{{Name: "job", Image: "busybox",
					Resources: corev1.ResourceRequirements{Requests: gpus, Limits: gpus}}},
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, PriorityClassName: class},
			}
			if err := c.Client.Create(ctx, filler); err != nil {
				t.Fatal(err)
			}
			t.Logf("node %s: %d %s taken by another model server", n.Name, free, res)
			filled++
		}
	}
	return filled
}

// engineImages are the images of the running vLLM engine pods.
func engineImages(t *testing.T, c *delivery.Cluster) map[string]bool {
	t.Helper()
	var pods corev1.PodList
	if err := c.Client.List(context.Background(), &pods); err != nil {
		t.Fatal(err)
	}
	images := map[string]bool{}
	for _, p := range pods.Items {
		if p.Labels["app.kubernetes.io/component"] == "serving-engine" && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			images[p.Spec.Containers[0].Image] = true
		}
	}
	return images
}

// Day 2: a new vLLM image on pools with no spare GPU, with the engine
// Deployments' strategy put back as the vllm-stack chart has it (maxSurge
// 100 %, maxUnavailable 0): the new pod needs GPUs no node has, stays
// Pending, and the delivery never converges (Flux's wait on the GPU layer
// fails; Argo CD's sync ends with the engines' last wave applied and the
// rollout stuck). The lifecycle's image step converges with
// the program's strategy; this shows the harness sees the difference.
func TestDay2ImageTagWithTheChartStrategyFails(t *testing.T) {
	t.Parallel()
	const newImage = "vllm/vllm-openai:v0.11.1"
	for _, tool := range gitops.Tools {
		t.Run(tool, func(t *testing.T) {
			t.Parallel() // each on its own cluster
			dir, c := converged(t, "dev", tool)
			if fillGPUs(t, c) == 0 {
				t.Fatal("no GPU node had a free GPU to fill: the pool was full already or has none")
			}
			renderFor(t, "dev", tool, dir, func(cfg *config.Config) { cfg.Serving.Image = newImage })
			surgeAsTheChart(t, dir)
			c.Limit = time.Minute // the rollout that works takes seconds
			steps, objs := deliver(t, c, dir, tool)
			if delivery.Failed(steps) != nil {
				return // Flux: the GPU layer's wait fails
			}
			// Argo CD: the engines are in the last wave, which a sync does
			// not wait for; the Application stays Progressing
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if problems := c.Converged(ctx, objs, time.Minute); len(problems) == 0 {
				t.Fatalf("the rollout completed with maxSurge 100 %% on a full pool: the harness does not see the strategy\n%s", c.Srv.Kubectl(t, "get", "pods", "-A", "-o", "wide"))
			}
		})
	}
}

// surgeAsTheChart puts the engine Deployments' strategy back to the
// vllm-stack chart's (0.1.12 templates/_helpers.tpl: maxSurge 100 %,
// maxUnavailable 0).
func surgeAsTheChart(t *testing.T, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, gitops.WorkloadTree, "*", "apps_v1-deployment-*-vllm-*.yaml"))
	if len(files) == 0 {
		t.Fatal("no engine Deployment in the render")
	}
	for _, f := range files {
		editYAML(t, f, f, func(d map[string]any) {
			d["spec"].(map[string]any)["strategy"] = map[string]any{"type": "RollingUpdate",
				"rollingUpdate": map[string]any{"maxSurge": "100%", "maxUnavailable": 0}}
		})
	}
}

// podSpecJSON is a pod's spec as JSON, to look for a name in.
func podSpecJSON(p corev1.Pod) string {
	b, _ := json.Marshal(p.Spec)
	return string(b)
}

// leftOf lists the objects that still name model.
func leftOf(t *testing.T, c *delivery.Cluster, model string) []string {
	t.Helper()
	var left []string
	for _, gvk := range []string{"apps/v1/Deployment", "v1/Service", "v1/PersistentVolumeClaim", "batch/v1/Job", "v1/Secret",
		"v1/ConfigMap", "networking.k8s.io/v1/Ingress", "networking.k8s.io/v1/NetworkPolicy", "cilium.io/v2/CiliumNetworkPolicy",
		"keda.sh/v1alpha1/ScaledObject", "http.keda.sh/v1beta1/InterceptorRoute", "monitoring.coreos.com/v1/ServiceMonitor",
		"monitoring.coreos.com/v1/PrometheusRule", "external-secrets.io/v1/ExternalSecret", "v1/Pod"} {
		list := &unstructured.UnstructuredList{}
		gv, kind := path.Split(gvk)
		list.SetAPIVersion(strings.TrimSuffix(gv, "/"))
		list.SetKind(kind + "List")
		if err := c.Client.List(context.Background(), list); meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			continue // no such kind (any more): nothing of it is left
		} else if err != nil {
			t.Fatalf("list %s: %v", gvk, err)
		}
		for _, o := range list.Items {
			if o.GetDeletionTimestamp() != nil && kind == "Pod" {
				continue // on its way out
			}
			b, _ := json.Marshal(o.Object)
			if strings.Contains(string(b), model) {
				left = append(left, kind+"/"+o.GetNamespace()+"/"+o.GetName())
			}
		}
	}
	return left
}
