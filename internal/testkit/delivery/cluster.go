// Package delivery delivers a rendered stack to a simulated cluster as its
// GitOps tool would: Flux with its own apply-and-wait engine
// (github.com/fluxcd/pkg/ssa, kstatus), Argo CD by its sync-wave and
// health rules (encoded from gitops-engine, which does not build here).
// It also checks that what was delivered converged.
package delivery

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/internal/testkit/gpustack"
	"github.com/natron/gpu-node-pools/internal/testkit/kubeapi"
)

// Cluster is a simulated cluster to deliver to.
type Cluster struct {
	Srv     *kubeapi.Server
	Client  client.Client
	Manager *ssa.ResourceManager
	// Limit caps each wait (a Kustomization's timeout, an Argo CD wave):
	// the simulated time the harness gives it.
	Limit time.Duration
	// Log, when set, is told each step as it ends.
	Log func(Step)
	// GPU is the GPU stack's stand-ins on the cluster, when they run.
	GPU *gpustack.Stack
	// inventory is what each Kustomization or Application applied last,
	// to prune what leaves it.
	inventory map[string][]*unstructured.Unstructured
}

// stale are the objects of name's last inventory that objs no longer has;
// objs becomes the inventory.
func (c *Cluster) stale(name string, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	if c.inventory == nil {
		c.inventory = map[string][]*unstructured.Unstructured{}
	}
	now := map[string]bool{}
	for _, o := range objs {
		now[key(o)] = true
	}
	var out []*unstructured.Unstructured
	for _, o := range c.inventory[name] {
		if !now[key(o)] {
			out = append(out, o)
		}
	}
	c.inventory[name] = objs
	return out
}

func (c *Cluster) done(s Step) Step {
	if c.Log != nil {
		c.Log(s)
	}
	return s
}

// Connect opens a client to srv, with a REST mapper that learns the CRDs a
// delivery adds.
func Connect(t testing.TB, srv *kubeapi.Server) *Cluster {
	t.Helper()
	ctrllog.SetLogger(logr.Discard()) // controller-runtime asks for one
	cfg := srv.Config(t)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	// Flux's own field manager and poller (kustomize-controller
	// internal/controller/kustomization_controller.go).
	poller := polling.NewStatusPoller(c, mapper, polling.Options{})
	m := ssa.NewResourceManager(c, poller, ssa.Owner{Field: "kustomize-controller", Group: "kustomize.toolkit.fluxcd.io"})
	return &Cluster{Srv: srv, Client: c, Manager: m}
}

// Build is a tree's objects as kustomize builds them (Flux and Argo CD
// both build a directory with a kustomization.yaml this way).
func Build(dir string) ([]*unstructured.Unstructured, error) {
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range res.Resources() {
		b, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := yaml.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, nil
}

// Repo maps the platform repository's paths to the render directory: the
// render is published at Path.
type Repo struct {
	Root string // the render directory
	Path string // where it is published in the repository
}

// Local is a repository path's directory in the render.
func (r Repo) Local(path string) (string, error) {
	// Flux writes paths from the repository root as ./a/b.
	rest, ok := strings.CutPrefix(strings.Trim(filepath.Clean(path), "/")+"/", strings.Trim(r.Path, "/")+"/")
	if !ok {
		return "", fmt.Errorf("path %s is outside the published render %s", path, r.Path)
	}
	return filepath.Join(r.Root, rest), nil
}

// Step is one Flux Kustomization or one Argo CD sync wave.
type Step struct {
	Name    string
	Applied int
	Pruned  int
	Took    time.Duration
	Err     error
}

func (s Step) String() string {
	if s.Err != nil {
		return fmt.Sprintf("%s: %d applied, failed after %s: %v", s.Name, s.Applied, s.Took.Round(time.Second), s.Err)
	}
	return fmt.Sprintf("%s: %d applied, %d pruned, ready in %s", s.Name, s.Applied, s.Pruned, s.Took.Round(time.Second))
}

// Failed is the first failed step.
func Failed(steps []Step) error {
	for _, s := range steps {
		if s.Err != nil {
			return fmt.Errorf("%s", s)
		}
	}
	return nil
}

func key(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s/%s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
}
