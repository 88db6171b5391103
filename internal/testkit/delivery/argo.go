package delivery

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/fluxcd/pkg/ssa"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// syncWave is Argo CD's sync-wave annotation.
const syncWave = "argocd.argoproj.io/sync-wave"

// AppInstanceLabel is where Argo CD's label tracking, the default
// resourceTrackingMethod before Argo CD 3.0, records which Application
// owns an object.
const AppInstanceLabel = "app.kubernetes.io/instance"

// TrackByLabel marks an object as the Application's as label tracking
// does: its own metadata.labels only, overwriting the chart's value; pod
// templates keep theirs (argo-cd v2.14.0 util/kube/kube.go
// SetAppInstanceLabel: sub-resources are labelled for the legacy key
// "applications.argoproj.io/app-name" alone). A selector on a Service's
// or a Deployment's own app.kubernetes.io/instance then finds nothing.
func TrackByLabel(o *unstructured.Unstructured, app string) {
	labels := o.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[AppInstanceLabel] = app
	o.SetLabels(labels)
}

// Application is what an Argo CD Application tells the controller.
type Application struct {
	Name string
	Path string
	Wave int // its own sync wave in the app-of-apps
}

// Applications reads the Argo CD Applications among objs in the order the
// parent sync applies them (by wave, then name).
func Applications(objs []*unstructured.Unstructured) []Application {
	var out []Application
	for _, o := range objs {
		if o.GetKind() != "Application" || o.GroupVersionKind().Group != "argoproj.io" {
			continue
		}
		a := Application{Name: o.GetName(), Wave: wave(o)}
		a.Path, _, _ = unstructured.NestedString(o.Object, "spec", "source", "path")
		out = append(out, a)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Wave != out[j].Wave {
			return out[i].Wave < out[j].Wave
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func wave(o *unstructured.Unstructured) int {
	w, _ := strconv.Atoi(o.GetAnnotations()[syncWave])
	return w
}

// kindOrder is gitops-engine's order of kinds within a wave (v0.7.3
// pkg/sync/sync_tasks.go kindOrder, from Helm's kind_sorter.go): kinds not
// listed (custom resources) come last.
var kindOrder = []string{"Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass", "PersistentVolume",
	"PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
	"ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod",
	"ReplicationController", "ReplicaSet", "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob",
	"IngressClass", "Ingress", "APIService"}

func kindRank(kind string) int {
	if i := slices.Index(kindOrder, kind); i >= 0 {
		return i - len(kindOrder)
	}
	return 0
}

// SortTasks orders objects as gitops-engine sorts sync tasks: by wave,
// then kind, then name (pkg/sync/sync_tasks.go Less).
func SortTasks(objs []*unstructured.Unstructured) {
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i], objs[j]
		if d := wave(a) - wave(b); d != 0 {
			return d < 0
		}
		if d := kindRank(a.GetKind()) - kindRank(b.GetKind()); d != 0 {
			return d < 0
		}
		return a.GetName() < b.GetName()
	})
}

// ArgoSync syncs one Application's tree as gitops-engine's sync context
// does (v0.7.3 pkg/sync/sync_context.go Sync): the tasks of the lowest
// wave are applied; with more than one wave, each applied task stays
// running until its live object's health is Healthy or has no health
// (then it succeeds) or is Degraded (then the sync fails); the next wave
// starts only when no task is running. The last wave is not waited for:
// the operation succeeds once it is applied ("EVEN if those objects
// subsequently degraded"). Argo CD sets no limit on that wait; limit is
// the simulated time this harness gives each wave.
func (c *Cluster) ArgoSync(ctx context.Context, app, dir string) []Step {
	name := "Application " + app
	objs, err := Build(dir)
	if err != nil {
		return []Step{c.done(Step{Name: name, Err: err})}
	}
	for _, o := range objs {
		TrackByLabel(o, app)
	}
	SortTasks(objs)
	// What left the tree is pruned (the program's Applications set
	// prune: true) before a wave's applies, in the reverse of the waves
	// it was applied in (pruneWaves).
	stale := c.stale("Application "+name, objs)
	pruneWave := pruneWaves(stale)
	var waves []int
	for _, o := range objs {
		if w := wave(o); !slices.Contains(waves, w) {
			waves = append(waves, w)
		}
	}
	for _, w := range pruneWave {
		if !slices.Contains(waves, w) {
			waves = append(waves, w)
		}
	}
	slices.Sort(waves)
	multiStep := len(waves) > 1
	var steps []Step
	for i, w := range waves {
		start := time.Now()
		step := Step{Name: fmt.Sprintf("%s wave %d", name, w)}
		var tasks []*unstructured.Unstructured
		for _, o := range objs {
			if wave(o) == w {
				tasks = append(tasks, o)
			}
		}
		var pruned []*unstructured.Unstructured
		for _, o := range stale {
			if pruneWave[key(o)] != w {
				continue
			}
			if err := c.Client.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationForeground)); client.IgnoreNotFound(err) != nil {
				step.Err = fmt.Errorf("prune %s: %w", key(o), err)
				break
			}
			pruned = append(pruned, o)
			step.Pruned++
		}
		for _, o := range tasks {
			if step.Err != nil {
				break
			}
			// ServerSideApply=true, as the program's Applications ask.
			if _, err := c.Manager.Apply(ctx, o, ssa.DefaultApplyOptions()); err != nil {
				step.Err = fmt.Errorf("apply %s: %w", key(o), err)
				break
			}
			step.Applied++
		}
		if step.Err == nil && multiStep && i < len(waves)-1 {
			step.Err = c.waitHealthy(ctx, tasks, c.Limit)
		}
		if step.Err == nil {
			step.Err = c.waitPruned(ctx, pruned, c.Limit)
		}
		step.Took = time.Since(start)
		steps = append(steps, c.done(step))
		if step.Err != nil {
			return steps
		}
	}
	return steps
}

// pruneWaves are the waves stale objects are pruned in, by key: the
// reverse of the order they were applied in, by a symmetric swap of the
// prune tasks' distinct waves (the first with the last, ...), so that a
// claim of an early wave is pruned after the pods of a later one that
// mount it (gitops-engine pkg/sync/sync_context.go, getSyncTasks, as
// Argo CD 3.x vendors it).
func pruneWaves(stale []*unstructured.Unstructured) map[string]int {
	var distinct []int
	for _, o := range stale {
		if w := wave(o); !slices.Contains(distinct, w) {
			distinct = append(distinct, w)
		}
	}
	slices.Sort(distinct)
	swapped := map[int]int{}
	for i, w := range distinct {
		swapped[w] = distinct[len(distinct)-1-i]
	}
	out := map[string]int{}
	for _, o := range stale {
		out[key(o)] = swapped[wave(o)]
	}
	return out
}

// waitPruned waits until each object the wave pruned is gone: the sync
// neither moves to the next wave nor ends while a pruned object is still
// being deleted (gitops-engine pkg/sync/sync_context.go, Sync: "if pruned
// tasks pending deletion, then wait", as Argo CD 3.x vendors it). A
// finalizer that holds it (a claim a running pod still mounts) holds the
// sync.
func (c *Cluster) waitPruned(ctx context.Context, pruned []*unstructured.Unstructured, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var left []string
		for _, o := range pruned {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(o.GroupVersionKind())
			err := c.Client.Get(ctx, client.ObjectKeyFromObject(o), live)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				left = append(left, fmt.Sprintf("%s: %v", key(o), err))
			default: // still there (the inventory holds the rendered objects, without UIDs)
				left = append(left, key(o))
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("pruned objects still being deleted after %s: %v", limit, left)
		}
		time.Sleep(time.Second)
	}
}

// waitHealthy waits until every task's live object is Healthy or has no
// health; a Degraded one fails the sync at once.
func (c *Cluster) waitHealthy(ctx context.Context, tasks []*unstructured.Unstructured, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var running []string
		for _, o := range tasks {
			h, err := c.liveHealth(ctx, o)
			if err != nil {
				running = append(running, err.Error())
				continue
			}
			switch {
			case h == nil || h.Status == Healthy:
			case h.Status == Degraded:
				return fmt.Errorf("%s is Degraded: %s", key(o), h.Message)
			default:
				running = append(running, fmt.Sprintf("%s %s: %s", key(o), h.Status, h.Message))
			}
		}
		if len(running) == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("still waiting for healthy state of %v after %s%s", running, limit, c.waitingNote())
		}
		time.Sleep(time.Second)
	}
}
