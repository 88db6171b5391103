package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/testkit/delivery"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
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
	return dir, c
}

func requireConverged(t *testing.T, c *delivery.Cluster, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), convergeLimit+time.Minute)
	defer cancel()
	if problems := c.Converged(ctx, objs, convergeLimit); len(problems) > 0 {
		t.Fatalf("not converged within %s:\n%s", convergeLimit, strings.Join(problems, "\n"))
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

// Day 2: a new vLLM image on pools with no spare GPU, through each GitOps
// tool. The engines roll one pod at a time (maxSurge 0, maxUnavailable 1),
// so each new pod takes the GPUs its old one frees and the second sync
// converges with every engine on the new image. Put back as the chart has
// it (maxSurge 100 %, maxUnavailable 0), the new pod needs GPUs no node
// has, stays Pending, and the sync fails: the harness sees the strategy.
func TestDay2ImageTagOnAFullPool(t *testing.T) {
	const newImage = "vllm/vllm-openai:v0.11.1"
	for _, tool := range gitops.Tools {
		for _, chartStrategy := range []bool{false, true} {
			name := tool
			if chartStrategy {
				name += "/chart-strategy"
			}
			t.Run(name, func(t *testing.T) {
				dir, c := converged(t, "dev", tool)
				if fillGPUs(t, c) == 0 {
					t.Fatal("no GPU node had a free GPU to fill: the pool was full already or has none")
				}
				renderFor(t, "dev", tool, dir, func(cfg *config.Config) { cfg.Serving.Image = newImage })
				if chartStrategy {
					surgeAsTheChart(t, dir)
				}
				if chartStrategy {
					c.Limit = time.Minute // the rollout that works takes seconds
				}
				steps, objs := deliver(t, c, dir, tool)
				err := delivery.Failed(steps)
				if chartStrategy {
					if err == nil {
						t.Fatalf("the rollout completed with maxSurge 100 %% on a full pool: the harness does not see the strategy\n%s", c.Srv.Kubectl(t, "get", "pods", "-A", "-o", "wide"))
					}
					return
				}
				if err != nil {
					t.Fatalf("the image change did not sync: %v", err)
				}
				requireConverged(t, c, objs)
				if images := engineImages(t, c); len(images) != 1 || !images[newImage] {
					t.Errorf("engines run %v after the sync, want only %s", images, newImage)
				}
			})
		}
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

// redeliver renders the converged stack again after change and delivers
// it with tool, which must converge; it returns the objects delivered.
func redeliver(t *testing.T, c *delivery.Cluster, stack, tool, dir string, change func(*config.Config)) []*unstructured.Unstructured {
	t.Helper()
	renderFor(t, stack, tool, dir, change)
	steps, objs := deliver(t, c, dir, tool)
	if err := delivery.Failed(steps); err != nil {
		t.Fatalf("the change did not sync: %v", err)
	}
	requireConverged(t, c, objs)
	return objs
}

// livePods are the pods not being deleted, as JSON by name.
func livePods(t *testing.T, c *delivery.Cluster, labels map[string]string) map[string]string {
	t.Helper()
	var pods corev1.PodList
	if err := c.Client.List(context.Background(), &pods, client.MatchingLabels(labels)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded {
			b, _ := json.Marshal(p.Spec)
			out[p.Name] = string(b)
		}
	}
	return out
}

// Day 2: a model's source changes. The download Job is keyed by the
// source, so a new Job downloads the new weights (the old one is pruned),
// and the engines roll onto the new weights directory.
func TestDay2SourceChange(t *testing.T) {
	const model, newSource = "llama3-8b", "s3://models/meta-llama/Llama-3.1-8B-Instruct-v2"
	for _, tool := range gitops.Tools {
		t.Run(tool, func(t *testing.T) {
			dir, c := converged(t, "dev", tool)
			oldKey := serving.SourceKey(stacktest.Config(t, "dev").Models[0].Source)
			redeliver(t, c, "dev", tool, dir, func(cfg *config.Config) {
				for i := range cfg.Models {
					if cfg.Models[i].Name == model {
						cfg.Models[i].Source = newSource
					}
				}
			})
			newKey := serving.SourceKey(newSource)
			var jobs batchv1.JobList
			if err := c.Client.List(context.Background(), &jobs); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, j := range jobs.Items {
				if strings.HasPrefix(j.Name, "weights-"+model) {
					names = append(names, j.Name)
				}
			}
			if want := "weights-" + model + "-" + newKey; len(names) != 1 || names[0] != want {
				t.Errorf("download Jobs %v, want only %s (the old one pruned)", names, want)
			}
			engines := livePods(t, c, map[string]string{"gpu-node-pools/model": model, "app.kubernetes.io/component": "serving-engine"})
			if len(engines) == 0 {
				t.Fatal("no engine runs after the change")
			}
			for name, spec := range engines {
				if !strings.Contains(spec, newKey) || strings.Contains(spec, oldKey) {
					t.Errorf("engine %s does not run on the new weights (%s, not %s)", name, newKey, oldKey)
				}
			}
		})
	}
}

// Day 2: a model is removed. Nothing of it is left: its Deployment,
// Service, claim, download Job, Secrets, routes, scaling and monitoring
// objects are pruned, and no alerting rule names it.
func TestDay2ModelRemoved(t *testing.T) {
	const model = "llama3-8b"
	for _, tool := range gitops.Tools {
		t.Run(tool, func(t *testing.T) {
			dir, c := converged(t, "dev", tool)
			redeliver(t, c, "dev", tool, dir, func(cfg *config.Config) {
				cfg.Models = slices.DeleteFunc(cfg.Models, func(m serving.ModelSpec) bool { return m.Name == model })
			})
			var left []string
			for _, gvk := range []string{"apps/v1/Deployment", "v1/Service", "v1/PersistentVolumeClaim", "batch/v1/Job", "v1/Secret",
				"v1/ConfigMap", "networking.k8s.io/v1/Ingress", "networking.k8s.io/v1/NetworkPolicy", "cilium.io/v2/CiliumNetworkPolicy",
				"keda.sh/v1alpha1/ScaledObject", "http.keda.sh/v1beta1/InterceptorRoute", "monitoring.coreos.com/v1/ServiceMonitor",
				"monitoring.coreos.com/v1/PrometheusRule", "external-secrets.io/v1/ExternalSecret", "v1/Pod"} {
				list := &unstructured.UnstructuredList{}
				gv, kind := path.Split(gvk)
				list.SetAPIVersion(strings.TrimSuffix(gv, "/"))
				list.SetKind(kind + "List")
				if err := c.Client.List(context.Background(), list); err != nil {
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
			if len(left) > 0 {
				t.Errorf("left of the removed model %s: %v", model, left)
			}
		})
	}
}
