package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/secret"
	"github.com/natron/gpu-node-pools/internal/testkit/delivery"
	"github.com/natron/gpu-node-pools/internal/testkit/gpustack"
	"github.com/natron/gpu-node-pools/internal/testkit/kubeapi"
	"github.com/natron/gpu-node-pools/internal/testkit/nodesim"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/automation"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

// convergeLimit is the simulated time a first delivery gets to converge on
// the simulated cluster (fast KWOK stages: a pod starts within seconds of
// being bound), and each Argo CD wave to become healthy.
const convergeLimit = 4 * time.Minute

// publishPath is where the tests publish a render in the platform
// repository.
const publishPath = "clusters/acme/gpu"

// renderFor renders a stack for GitOps delivery with tool, its Secrets
// left to External Secrets from the store "platform-vault", into dir (a
// new one when empty), after the changes (a day-2 edit of the stack).
func renderFor(t *testing.T, stack, tool, dir string, changes ...func(*config.Config)) (string, *plan.Stack) {
	t.Helper()
	return renderStack(t, stacktest.Config(t, stack), stack, tool, dir, changes...)
}

// renderStack is renderFor with the stack's config given.
func renderStack(t *testing.T, cfg *config.Config, stack, tool, dir string, changes ...func(*config.Config)) (string, *plan.Stack) {
	t.Helper()
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "rendered")
	}
	cfg.RenderDir = dir
	cfg.Platform.ChartDir = filepath.Join(pulumitest.SharedDir(t), "charts")
	g := cfg.GitOps
	if !g.Set() {
		g = gitops.Spec{RepoURL: "https://git.example/platform/acme.git", AllowedHosts: []string{"git.example"}}
	}
	g.Tool, g.Path, g.Project = tool, publishPath, ""
	g.ExternalSecrets = &gitops.ExternalSecrets{Store: "platform-vault"}
	cfg.GitOps = g
	if cfg.Serving.APIKey == "" { // the random provider cannot be built here
		cfg.Serving.APIKey = secret.Secret("sim-api-key-of-the-simulated-cluster")
	}
	for _, change := range changes {
		change(cfg)
	}
	e, _ := recordingEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	render := automation.Render
	if _, whole := cfg.Cluster.(*natron.Cluster); !whole {
		// an AKS stack's pools and identities need the azure-native
		// plugin, which cannot be built here; its workload tree is the same
		render = automation.RenderWorkloads
	}
	if _, err := render(ctx, stack, cfg, e); err != nil {
		t.Fatal(err)
	}
	p, err := plan.Resolve(cfg, stack)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, cfg.RenderDir, p)
	return cfg.RenderDir, p
}

// platformCRDs are the CRDs of the operators the customer's platform
// runs: what a simulated cluster starts with (its seed).
func platformCRDs(t testing.TB, srv *kubeapi.Server) {
	t.Helper()
	crds := filepath.Join(pulumitest.SharedDir(t), "crds")
	srv.ApplyCRDs(t, filepath.Join(crds, "cluster-api"), filepath.Join(crds, "cluster-api-provider-metal3"),
		filepath.Join(crds, "kyverno", "kyverno.io_clusterpolicies.yaml"), filepath.Join(crds, "cilium", "ciliumnetworkpolicies.yaml"),
		filepath.Join(crds, "velero"), filepath.Join(crds, "cloudnative-pg"), filepath.Join(crds, "keda-http-add-on"))
	installMonitoringCRDs(t, srv)
	installChartCRDs(t, srv, "keda-2.20.2.tgz")
}

// The states simulated clusters start from, prepared once per run: the
// platform's CRDs, and those with the External Secrets Operator's (the
// platforms that take renders by GitOps).
var (
	platformSeed = &kubeapi.Seed{Name: "platform", Prepare: platformCRDs}
	gitopsSeed   = &kubeapi.Seed{Name: "platform-gitops", Prepare: func(t testing.TB, srv *kubeapi.Server) {
		platformCRDs(t, srv)
		srv.ApplyCRDs(t, delivery.ExternalSecretsCRDs(t))
	}}
)

// simCluster is a simulated cluster as the customer's platform has it
// before our stack: nodes for every pool (as the autoscaler would give the
// stack's models and jobs) and two CPU nodes, the CRDs of the operators
// the platform runs (from seed), the namespaces it already has, the GPU
// operator's runtime class, a storage provisioner and the Secrets
// operators make when they run (KEDA's certificates). Pods start only
// with the Secrets and ConfigMaps they read (kubeapi.WithInputsGate).
func simCluster(t *testing.T, seed *kubeapi.Seed, p *plan.Stack, namespaces ...string) *delivery.Cluster {
	t.Helper()
	srv := kubeapi.StartCluster(t, kubeapi.WithInputsGate(), kubeapi.WithSeed(seed))
	srv.Create(t, nodesim.CPUNode("platform-0", 16, 64), nodesim.CPUNode("platform-1", 16, 64))
	stack := gpustack.Start(t, srv, gpustack.Hardware{Plugin: devicePlugin(p)})
	addPoolNodes(t, srv, stack, p)
	var host []map[string]any
	for _, ns := range namespaces {
		host = append(host, map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}})
	}
	if len(host) > 0 {
		srv.Create(t, host...)
	}
	c := delivery.Connect(t, srv)
	c.GPU = stack
	c.StartProvisioner(t)
	c.StartOperators(t, delivery.KEDACerts)
	c.Limit = convergeLimit
	c.Log = func(s delivery.Step) { t.Log(s) }
	return c
}

// addPoolNodes gives each pool of p that has no node yet the nodes its
// models and jobs need, as the cluster autoscaler would: hosts of the
// pool's SKU (the GPU stack's hardware), joining with no GPUs advertised.
func addPoolNodes(t *testing.T, srv *kubeapi.Server, stack *gpustack.Stack, p *plan.Stack) {
	t.Helper()
	var nodes []map[string]any
	stack.Join(p.Pools...)
	have := strings.Fields(srv.Kubectl(t, "get", "nodes", "-o", "name"))
	for _, pool := range p.Pools {
		if slices.Contains(have, "node/"+nodesim.GPUNodeName(pool.Facts.Name, 0)) {
			continue
		}
		for i := range nodesFor(p, pool.Facts) {
			nodes = append(nodes, nodesim.JoiningGPUNode(pool, i))
		}
	}
	if len(nodes) > 0 {
		srv.Create(t, nodes...)
	}
}

// hostCluster is simCluster for a render delivered by GitOps: with the
// namespaces the render's objects live in but does not create (the
// platform's own: velero, keda, capi-…) and the External Secrets Operator
// with the render's secrets in its store.
func hostCluster(t *testing.T, dir string, p *plan.Stack) *delivery.Cluster {
	t.Helper()
	var all []*unstructured.Unstructured
	for _, tree := range []string{gitops.WorkloadTree, gitops.ManagementTree} {
		if _, err := os.Stat(filepath.Join(dir, tree)); err == nil {
			objs, err := delivery.Build(filepath.Join(dir, tree))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, objs...)
		}
	}
	declared := map[string]bool{}
	for _, o := range all {
		if o.GetKind() == "Namespace" {
			declared[o.GetName()] = true
		}
	}
	var platform []string
	for _, o := range all {
		if ns := o.GetNamespace(); ns != "" && !declared[ns] {
			declared[ns] = true
			platform = append(platform, ns)
		}
	}
	c := simCluster(t, gitopsSeed, p, platform...)
	delivery.StartExternalSecrets(t, c.Srv, "platform-vault", delivery.StoreEntries(all))
	return c
}

// deliver delivers a render's trees with its tool and returns the steps and
// every object delivered.
func deliver(t *testing.T, c *delivery.Cluster, dir, tool string) ([]delivery.Step, []*unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	gitopsObjs, err := delivery.Build(filepath.Join(dir, "gitops"))
	if err != nil {
		t.Fatal(err)
	}
	repo := delivery.Repo{Root: dir, Path: publishPath}
	var steps []delivery.Step
	var delivered []*unstructured.Unstructured
	switch tool {
	case gitops.Flux:
		ks, err := delivery.Kustomizations(gitopsObjs)
		if err != nil {
			t.Fatal(err)
		}
		if len(ks) == 0 {
			t.Fatal("the render has no Flux Kustomizations")
		}
		steps = c.Flux(ctx, repo, ks)
		for _, k := range ks {
			local, err := repo.Local(k.Path)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := delivery.Build(local)
			if err != nil {
				t.Fatal(err)
			}
			delivered = append(delivered, objs...)
		}
	case gitops.ArgoCD:
		apps := delivery.Applications(gitopsObjs)
		if len(apps) == 0 {
			t.Fatal("the render has no Argo CD Applications")
		}
		for _, a := range apps {
			local, err := repo.Local(a.Path)
			if err != nil {
				t.Fatal(err)
			}
			s := c.ArgoSync(ctx, a.Name, local)
			steps = append(steps, s...)
			if delivery.Failed(s) != nil {
				break
			}
			objs, _ := delivery.Build(local)
			delivered = append(delivered, objs...)
		}
	}
	var lines []string
	for _, s := range steps {
		lines = append(lines, s.String())
	}
	t.Logf("%s delivery:\n  %s", tool, strings.Join(lines, "\n  "))
	return steps, delivered
}

// moveKind moves every file of kind in a tree from one layer to another,
// with the layer's sync wave and both kustomization.yaml lists: a tree laid
// out as an older program laid it out.
func moveKind(t *testing.T, tree, kind string, from, to gitops.Layer) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(tree, from.Dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		var o map[string]any
		readYAML(t, f, &o)
		if o["kind"] != kind {
			continue
		}
		editYAML(t, f, filepath.Join(tree, to.Dir, filepath.Base(f)), func(o map[string]any) {
			o["metadata"].(map[string]any)["annotations"].(map[string]any)[gitops.SyncWave] = strconv.Itoa(to.Wave)
		})
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
		editResources(t, filepath.Join(tree, from.Dir), func(r []string) []string {
			return slices.DeleteFunc(r, func(s string) bool { return s == filepath.Base(f) })
		})
		editResources(t, filepath.Join(tree, to.Dir), func(r []string) []string { return append(r, filepath.Base(f)) })
		moved++
	}
	return moved
}

// editResources rewrites the resources list of a layer's kustomization.yaml.
func editResources(t *testing.T, dir string, edit func([]string) []string) {
	t.Helper()
	f := filepath.Join(dir, "kustomization.yaml")
	editYAML(t, f, f, func(k map[string]any) {
		var res []string
		for _, r := range asList(k["resources"]) {
			res = append(res, r.(string))
		}
		k["resources"] = edit(res)
	})
}

func readYAML(t *testing.T, f string, into any) {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", f, err)
	}
}

// editYAML reads a YAML object from one file, edits it and writes it to
// another (or the same).
func editYAML(t *testing.T, from, to string, edit func(map[string]any)) {
	t.Helper()
	var o map[string]any
	readYAML(t, from, &o)
	edit(o)
	out, err := yaml.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// withKindLate renders the dev stack for tool with every object of kind
// moved from the inputs layer to the last one, where a layout by kind put
// it, and returns the render, its plan and how many objects moved.
func withKindLate(t *testing.T, tool, kind string) (string, *plan.Stack, int) {
	t.Helper()
	dir, p := renderFor(t, "dev", tool, "")
	n := moveKind(t, filepath.Join(dir, gitops.WorkloadTree), kind, gitops.Layers[gitops.LayerInputs], gitops.Layers[gitops.LayerDelivery])
	return dir, p, n
}

// deliveryFails delivers a render that must not converge, a minute per
// layer (enough for the delivery that converges: seconds per layer), and
// requires the failure to name the layer that waits (its Flux
// Kustomization, its Argo CD wave) and each of the wants.
func deliveryFails(t *testing.T, dir string, p *plan.Stack, tool string, waits gitops.Layer, wants ...string) *delivery.Cluster {
	t.Helper()
	c := hostCluster(t, dir, p)
	c.Limit = time.Minute
	steps, _ := deliver(t, c, dir, tool)
	err := delivery.Failed(steps)
	if err == nil {
		t.Fatal("the sync completed: the harness does not see the order")
	}
	layer := waits.Dir
	if tool == gitops.ArgoCD {
		layer = fmt.Sprintf("wave %d", waits.Wave)
	}
	for _, want := range append([]string{layer}, wants...) {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the failure does not name %q: %v", want, err)
		}
	}
	return c
}

// The delivery harness catches the defect the program had: with the
// ExternalSecrets back in the custom-resources layer (the last wave, after
// the Job and Deployments that read their Secrets), the first sync of the
// dev stack never completes, with either tool: the kubelet does not start
// the download, so the providers layer (Flux's wait, Argo CD's wave) never
// becomes healthy and the later layers are never applied.
func TestFirstDeliveryFailsWithSecretsLate(t *testing.T) {
	t.Parallel()
	for _, tool := range gitops.Tools {
		t.Run(tool, func(t *testing.T) {
			t.Parallel() // each on its own cluster
			dir, p, n := withKindLate(t, tool, "ExternalSecret")
			if n == 0 {
				t.Fatal("the dev render has no ExternalSecret to move")
			}
			if len(inputsBeforePods(treeObjects(t, dir))) == 0 {
				t.Error("the invariant finds every Secret in time with the ExternalSecrets a layer late")
			}
			deliveryFails(t, dir, p, tool, gitops.Layers[gitops.LayerProviders], "Secret/") // the download's layer
		})
	}
}

// With the GPU operator's ClusterPolicy back in the custom-resources layer
// (where its kind put it before layers followed needs), the first delivery
// of the bare-metal stack never finishes, with either tool: the model
// servers ask for the RuntimeClass the operator makes from that
// ClusterPolicy, so the API server refuses their pods, the GPU layer never
// becomes healthy and the ClusterPolicy's layer is never applied. The
// stand-in operator acts only once its ClusterPolicy exists, as upstream.
func TestFirstDeliveryFailsWithClusterPolicyLate(t *testing.T) {
	t.Parallel()
	for _, tool := range gitops.Tools {
		t.Run(tool, func(t *testing.T) {
			t.Parallel() // each on its own cluster
			dir, p, n := withKindLate(t, tool, "ClusterPolicy")
			if n != 1 {
				t.Fatalf("moved %d ClusterPolicies, want the GPU operator's one", n)
			}
			c := deliveryFails(t, dir, p, tool, gitops.Layers[gitops.LayerGPUWorkloads]) // the GPU pods' layer
			if c.GPU.Acted("runtime-class") {
				t.Error("the GPU operator stand-in made its RuntimeClass with no ClusterPolicy")
			}
		})
	}
}

// A model that scales from zero, on a pool with no GPU to give (the
// subscription's quota is short), does not hold up the first delivery of
// the prod stack, with either tool: its ScaledObject comes in its
// Deployment's layer, and KEDA (the platform's, run by its own idle rule)
// scales the idle model to none before its replica can wait for a GPU.
// With the ScaledObject back in the last layer, where the released layout
// put it, the GPU layer waits for that replica for ever.
func TestFirstDeliveryOfAnIdleModelWithoutGPUs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tool string
		late bool // the ScaledObjects in the last layer
	}{{gitops.Flux, false}, {gitops.ArgoCD, false}, {gitops.Flux, true}} {
		t.Run(fmt.Sprintf("%s/late=%v", tc.tool, tc.late), func(t *testing.T) {
			t.Parallel() // each on its own cluster
			dir, p := renderFor(t, "prod", tc.tool, "")
			var idle *serving.Engine
			for i, e := range p.Serving.Engines {
				if e.ScalesFromZero() {
					idle = &p.Serving.Engines[i]
				}
			}
			if idle == nil {
				t.Fatal("the prod stack has no model that scales from zero")
			}
			if tc.late {
				if n := moveKind(t, filepath.Join(dir, gitops.WorkloadTree), "ScaledObject", gitops.Layers[gitops.LayerGPUWorkloads], gitops.Layers[gitops.LayerDelivery]); n == 0 {
					t.Fatal("no ScaledObject in the GPU layer to move")
				}
			}
			c := hostCluster(t, dir, p)
			// the quota is short: the idle model's pool has no node
			var gone []string
			for _, n := range strings.Fields(c.Srv.Kubectl(t, "get", "nodes", "-o", "name")) {
				if strings.HasPrefix(n, "node/"+idle.Pool.Name+"-") {
					gone = append(gone, strings.TrimPrefix(n, "node/"))
				}
			}
			if len(gone) == 0 {
				t.Fatalf("no node of pool %s to take away", idle.Pool.Name)
			}
			c.Srv.Kubectl(t, append([]string{"delete", "node"}, gone...)...)
			c.StartKEDA(t)
			if tc.late {
				c.Limit = time.Minute
			}
			steps, objs := deliver(t, c, dir, tc.tool)
			err := delivery.Failed(steps)
			idleDeployment := func() appsv1.Deployment {
				var d appsv1.Deployment
				if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: p.Serving.Options.Namespace, Name: serving.DeploymentName(idle.Name)}, &d); err != nil {
					t.Fatal(err)
				}
				return d
			}
			if tc.late {
				// Flux's own words at its deadline vary (the Deployment's
				// status, or its client's rate limiter): the layer, and the
				// idle model's replica still waiting for a GPU, say it
				if err == nil || !strings.Contains(err.Error(), gitops.Layers[gitops.LayerGPUWorkloads].Dir) {
					t.Errorf("with the ScaledObjects late: %v, want the GPU layer to fail its wait", err)
				}
				if d := idleDeployment(); d.Spec.Replicas == nil || *d.Spec.Replicas == 0 || d.Status.AvailableReplicas != 0 {
					t.Errorf("with the ScaledObjects late: %s wants %v replicas, %d available; want its first replica waiting for a GPU", d.Name, d.Spec.Replicas, d.Status.AvailableReplicas)
				}
				return
			}
			if err != nil {
				t.Fatalf("the first delivery did not complete: %v", err)
			}
			requireConverged(t, c, objs)
			if d := idleDeployment(); d.Spec.Replicas == nil || *d.Spec.Replicas != 0 {
				t.Errorf("%s has %v replicas after the delivery, want none: it is idle", d.Name, d.Spec.Replicas)
			}
		})
	}
}
