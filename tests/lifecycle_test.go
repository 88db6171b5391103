package tests

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/secret"
	"github.com/natron/gpu-node-pools/internal/testkit/delivery"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/automation"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// direct is the delivery by the real engine (pulumi up), beside the
// GitOps tools.
const direct = "direct"

// lifecycle is one stack on one simulated cluster, delivered one way,
// through a series of day-2 changes: each change adds to the ones before,
// as a customer's stack file does.
type lifecycle struct {
	stack, mode string
	c           *delivery.Cluster
	changes     []func(*config.Config)
	dir         string            // the render (GitOps)
	e           automation.Engine // the engine whose state is kept (direct)
	kc          secret.Secret
	model       serving.ModelSpec // the vLLM model the changes act on
}

// begin delivers the stack the first time and requires it to converge.
func begin(t *testing.T, stack, mode string) *lifecycle {
	t.Helper()
	start := time.Now()
	defer func() { t.Logf("first delivery converged in %s", time.Since(start).Round(time.Second)) }()
	l := &lifecycle{stack: stack, mode: mode}
	for _, m := range stacktest.Config(t, stack).Models {
		if m.Runtime == "" || m.Runtime == "vllm" {
			l.model = m
			break
		}
	}
	if l.model.Name == "" {
		t.Fatalf("stack %s has no vLLM model", stack)
	}
	if mode == direct {
		p := l.resolve(t)
		l.c = simCluster(t, platformSeed, p, hostNamespaces...)
		l.e, _ = recordingEngine(t)
		l.kc = secret.Secret(l.c.Srv.KubeconfigYAML(t))
		t.Logf("cluster up in %s", time.Since(start).Round(time.Second))
		l.up(t)
		return l
	}
	var p *plan.Stack
	l.dir, p = renderFor(t, stack, mode, "")
	l.c = hostCluster(t, l.dir, p)
	l.sync(t)
	return l
}

func (l *lifecycle) resolve(t *testing.T) *plan.Stack {
	t.Helper()
	kc := l.kc
	if kc == "" { // planning the cluster, before there is one
		kc = "apiVersion: v1\nkind: Config\n"
	}
	p, err := plan.Resolve(directConfig(t, l.stack, kc, l.changes...), l.stack)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// up applies the stack with the changes so far through the engine.
func (l *lifecycle) up(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	upDirect(t, openDirect(ctx, t, l.stack, directConfig(t, l.stack, l.kc, l.changes...), l.kc, l.e), l.c)
}

// sync renders the stack with the changes so far and delivers it with
// the GitOps tool.
func (l *lifecycle) sync(t *testing.T) {
	t.Helper()
	renderFor(t, l.stack, l.mode, l.dir, l.changes...)
	steps, objs := deliver(t, l.c, l.dir, l.mode)
	if err := delivery.Failed(steps); err != nil {
		t.Fatalf("the sync did not complete: %v", err)
	}
	requireConverged(t, l.c, objs)
	checkProvidedSecrets(t, l.c, objs)
}

// apply makes one more change (none: a sync of the same stack again),
// gives new pools their nodes as the autoscaler would, and delivers the
// stack, which must converge.
func (l *lifecycle) apply(t *testing.T, change func(*config.Config)) {
	t.Helper()
	if change != nil {
		l.changes = append(l.changes, change)
	}
	addPoolNodes(t, l.c.Srv, l.c.GPU, l.resolve(t))
	if l.mode == direct {
		l.up(t)
	} else {
		l.sync(t)
	}
}

// editModel is a change to the lifecycle's model.
func (l *lifecycle) editModel(edit func(*serving.ModelSpec)) func(*config.Config) {
	name := l.model.Name
	return func(cfg *config.Config) {
		for i := range cfg.Models {
			if cfg.Models[i].Name == name {
				edit(&cfg.Models[i])
			}
		}
	}
}

// engines are the live engine pods of the lifecycle's model.
func (l *lifecycle) engines(t *testing.T) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := l.c.Client.List(context.Background(), &pods, client.MatchingLabels{
		"gpu-node-pools/model": l.model.Name, "app.kubernetes.io/component": "serving-engine"}); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool {
		return p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
}

// eventually polls cond for up to a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(time.Minute); !cond(); time.Sleep(500 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("after a minute: not %s", what)
		}
	}
}

// A stack's life on the simulated cluster, for dev and prod, delivered by
// the engine directly and by each GitOps tool: the first delivery
// converges, and so does each day-2 change after it, with the end state
// each change promises.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	for _, stack := range []string{"dev", "prod"} {
		for _, mode := range append([]string{direct}, gitops.Tools...) {
			t.Run(stack+"/"+mode, func(t *testing.T) {
				t.Parallel() // each on its own cluster; mostly waiting on it
				l := begin(t, stack, mode)
				for _, step := range day2Steps {
					if !t.Run(step.name, func(t *testing.T) { step.run(t, l) }) {
						return // the next change starts from this one's end state
					}
				}
			})
		}
	}
}

// day2Steps are the changes of a lifecycle, in order.
var day2Steps = []struct {
	name string
	run  func(*testing.T, *lifecycle)
}{
	{"image tag on a full pool", imageOnAFullPool},
	{"source changed", sourceChanged},
	{"minReplicas 0 and back", scaleToZeroAndBack},
	{"pool added and model moved", poolAddedModelMoved},
	{"model removed", modelRemoved},
}

// A new vLLM image on pools with no spare GPU: the engines roll one pod at
// a time (maxSurge 0, maxUnavailable 1), each new pod taking the GPUs its
// old one frees (TestDay2ImageTagOnAFullPool shows the chart's strategy
// would not).
func imageOnAFullPool(t *testing.T, l *lifecycle) {
	const newImage = "vllm/vllm-openai:v0.11.1"
	if fillGPUs(t, l.c) == 0 {
		t.Fatal("no GPU node had a free GPU to fill: the pool was full already or has none")
	}
	l.apply(t, func(cfg *config.Config) { cfg.Serving.Image = newImage })
	if images := engineImages(t, l.c); len(images) != 1 || !images[newImage] {
		t.Errorf("engines run %v after the change, want only %s", images, newImage)
	}
}

// A model's source changes: the download Job is keyed by the source, so a
// new Job downloads the new weights (the old one is gone) and the engines
// roll onto the new weights directory.
func sourceChanged(t *testing.T, l *lifecycle) {
	oldKey, newSource := serving.SourceKey(l.model.Source), l.model.Source+"-v2"
	newKey := serving.SourceKey(newSource)
	l.apply(t, l.editModel(func(m *serving.ModelSpec) { m.Source = newSource }))
	var jobs batchv1.JobList
	if err := l.c.Client.List(context.Background(), &jobs); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range jobs.Items {
		if strings.HasPrefix(j.Name, "weights-"+l.model.Name) && j.DeletionTimestamp == nil {
			names = append(names, j.Name)
		}
	}
	if want := "weights-" + l.model.Name + "-" + newKey; len(names) != 1 || names[0] != want {
		t.Errorf("download Jobs %v, want only %s (the old one removed)", names, want)
	}
	engines := l.engines(t)
	if len(engines) == 0 {
		t.Fatal("no engine runs after the change")
	}
	for _, p := range engines {
		spec := podSpecJSON(p)
		if !strings.Contains(spec, newKey) || strings.Contains(spec, oldKey) {
			t.Errorf("engine %s does not run on the new weights (%s, not %s)", p.Name, newKey, oldKey)
		}
	}
}

// The model goes to minReplicas 0 and back to 1, with KEDA's idle scaling
// acting on the ScaledObject: at 0 the engine scales to zero, its GPUs are
// free and its route stays (the HTTP add-on wakes it); a sync of the same
// stack does not give the Deployment its replicas back (they are KEDA's);
// at 1 an engine runs again.
func scaleToZeroAndBack(t *testing.T, l *lifecycle) {
	stop := l.c.StartKEDA(t)
	zero, one := 0, 1
	l.apply(t, l.editModel(func(m *serving.ModelSpec) { m.MinReplicas = &zero }))
	dep := &appsv1.Deployment{}
	ns := l.resolve(t).Serving.Options.Namespace
	key := client.ObjectKey{Namespace: ns, Name: serving.DeploymentName(l.model.Name)}
	replicas := func() int32 {
		if err := l.c.Client.Get(context.Background(), key, dep); err != nil {
			t.Fatal(err)
		}
		if dep.Spec.Replicas == nil {
			return 1
		}
		return *dep.Spec.Replicas
	}
	eventually(t, "scaled to zero", func() bool { return replicas() == 0 && len(l.engines(t)) == 0 })
	route := &unstructured.Unstructured{}
	route.SetAPIVersion("http.keda.sh/v1beta1")
	route.SetKind("InterceptorRoute")
	if err := l.c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: serving.RouteName(l.model.Name)}, route); err != nil {
		t.Errorf("the model at zero has no route to wake it: %v", err)
	}
	stop()
	l.apply(t, nil) // Argo CD's and Flux's periodic sync, or pulumi up again
	if r := replicas(); r != 0 {
		t.Errorf("a sync of the same stack set the scaled-to-zero engine to %d replicas", r)
	}
	l.c.StartKEDA(t)
	l.apply(t, l.editModel(func(m *serving.ModelSpec) { m.MinReplicas = &one }))
	eventually(t, "one engine running again", func() bool {
		running := 0
		for _, p := range l.engines(t) {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 1
	})
}

// A pool is added and the model moves to it: the new pool's nodes run the
// model's engines, the old pool's none.
func poolAddedModelMoved(t *testing.T, l *lifecycle) {
	var moved string
	l.apply(t, func(cfg *config.Config) {
		for _, pool := range cfg.Pools {
			if pool.Name == l.model.Pool {
				pool.Name += "b"
				moved = pool.Name
				cfg.Pools = append(cfg.Pools, pool)
				break
			}
		}
		l.editModel(func(m *serving.ModelSpec) { m.Pool = moved })(cfg)
	})
	engines := l.engines(t)
	if len(engines) == 0 {
		t.Fatal("no engine runs after the move")
	}
	for _, p := range engines {
		var n corev1.Node
		if err := l.c.Client.Get(context.Background(), client.ObjectKey{Name: p.Spec.NodeName}, &n); err != nil {
			t.Fatalf("engine %s on node %q: %v", p.Name, p.Spec.NodeName, err)
		}
		if got := n.Labels[gpupool.LabelPool]; got != moved {
			t.Errorf("engine %s runs on pool %q, want the new pool %q", p.Name, got, moved)
		}
	}
}

// The model is removed: nothing of it is left (Deployment, Service,
// claim, download Job, Secrets, routes, scaling, monitoring, pods).
func modelRemoved(t *testing.T, l *lifecycle) {
	l.apply(t, func(cfg *config.Config) {
		cfg.Models = slices.DeleteFunc(cfg.Models, func(m serving.ModelSpec) bool { return m.Name == l.model.Name })
	})
	// Pruning deletes in the foreground (Argo CD's default, as the harness
	// does): a Deployment stays, being deleted, until its pods are gone.
	var left []string
	for end := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		if left = leftOf(t, l.c, l.model.Name); len(left) == 0 || time.Now().After(end) {
			break
		}
	}
	if len(left) > 0 {
		t.Errorf("a minute after the delivery, left of the removed model %s: %v", l.model.Name, left)
	}
}
