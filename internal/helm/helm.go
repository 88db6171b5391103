// Package helm is the one model of a Helm release in the program: which
// chart (name, pinned version and repository, or a local archive), the
// overrides a stack may set, the values with their escape hatch, the
// conversion to helm v4 Chart inputs, and the images a chart pulls (the
// registry policy must admit them).
package helm

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	helmv4 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/helm/v4"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/internal/plain"
)

// Chart is where a chart comes from. In a stack's config only Version and
// Repo are written (an override of the pinned chart); the program's pinned
// charts also carry the name and the images they pull.
type Chart struct {
	Name string `json:"-"`
	// Version is the chart version.
	// Default: the pinned one.
	Version string `json:"version,omitempty"`
	// Repo is the chart repository URL.
	// Default: the chart's upstream repository.
	Repo string `json:"repo,omitempty"`
	// Images are the image repositories the chart runs with the program's
	// values (tests check them against the rendered chart).
	Images []string `json:"-"`
}

// With is the pinned chart c with a stack's override applied.
func (c Chart) With(override Chart) Chart {
	if override.Version != "" {
		c.Version = override.Version
	}
	if override.Repo != "" {
		c.Repo = override.Repo
	}
	return c
}

var versionRe = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$`)

// Validate checks an override as written in config; example is a version
// the message offers.
func (c Chart) Validate(p *field.Path, example string) field.ErrorList {
	var errs field.ErrorList
	if c.Version != "" && !versionRe.MatchString(c.Version) {
		errs = append(errs, fielderr.Invalid(p.Child("version"), c.Version, "must be a chart version such as %s", example))
	}
	if c.Repo != "" && !strings.HasPrefix(c.Repo, "https://") && !strings.HasPrefix(c.Repo, "oci://") {
		errs = append(errs, fielderr.Invalid(p.Child("repo"), c.Repo, "must be an https:// or oci:// Helm repository"))
	}
	return errs
}

// Archive is the chart's archive in a directory of chart archives
// (<chart>-<version>.tgz, as `helm pull` names them).
func (c Chart) Archive(dir string) string {
	return filepath.Join(dir, c.Name+"-"+c.Version+".tgz")
}

// Release is one Helm release: a chart, from Dir's archives when Dir is
// set (air-gapped sites, offline tests), else from its repository.
type Release struct {
	Name  string
	Chart Chart
	Dir   string
	// Values are the release's values. A nil leaf removes the chart's
	// default at that key, as `helm --set key=null` does.
	Values map[string]any
	// Patches change what the chart renders where its values cannot (a
	// sidecar it has no slot for), applied to every rendered object in
	// order: by the program as a transform of the Chart's children, by
	// the tests to what they render.
	Patches []Patch
}

// Patch changes one rendered object, given as plain data with its
// apiVersion and kind, in place; it leaves kinds it is not about alone.
type Patch func(obj map[string]any)

// Apply applies the release's patches to rendered objects, in place.
func (r Release) Apply(objs []map[string]any) []map[string]any {
	for _, o := range objs {
		for _, p := range r.Patches {
			p(o)
		}
	}
	return objs
}

// Nulls is the values file of the release's nil leaves ("" when there are
// none). Pulumi drops nil map entries on the way to the provider, so they
// travel as a values file, which the provider merges under the values and
// Helm then applies as deletions of the chart's defaults.
func (r Release) Nulls() string {
	nulls := nullLeaves(r.Values)
	if nulls == nil {
		return ""
	}
	b, _ := yaml.Marshal(nulls)
	return string(b)
}

// nullLeaves keeps the paths to nil leaves of v, nil when there are none.
func nullLeaves(v map[string]any) map[string]any {
	var out map[string]any
	for k, e := range v {
		var keep any
		switch x := e.(type) {
		case nil:
		case map[string]any:
			sub := nullLeaves(x)
			if sub == nil {
				continue
			}
			keep = sub
		default:
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		out[k] = keep
	}
	return out
}

// Args are the helm v4 Chart inputs of the release.
func (r Release) Args(namespace string, skipAwait bool) *helmv4.ChartArgs {
	a := &helmv4.ChartArgs{
		Name:      pulumi.String(r.Name),
		Namespace: pulumi.String(namespace),
		Values:    plain.Map(r.Values),
		SkipAwait: pulumi.Bool(skipAwait),
	}
	if nulls := r.Nulls(); nulls != "" {
		a.ValueYamlFiles = pulumi.AssetOrArchiveArray{pulumi.NewStringAsset(nulls)}
	}
	if r.Dir != "" {
		a.Chart = pulumi.String(r.Chart.Archive(r.Dir))
		return a
	}
	a.Chart = pulumi.String(r.Chart.Name)
	a.Version = pulumi.String(r.Chart.Version)
	a.RepositoryOpts = &helmv4.RepositoryOptsArgs{Repo: pulumi.String(r.Chart.Repo)}
	return a
}

// Values turns typed chart values into the plain map Helm takes (numbers
// as float64, as Helm and the tests see them). The typed values are plain
// structs and maps of strings, numbers and booleans, which always encode.
func Values(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// Merge deep-merges a stack's extra values (the escape hatch) over the
// program's: maps merge key by key, anything else in extra replaces what
// base has. Neither input is changed.
func Merge(base, extra map[string]any) map[string]any {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]any{}
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if em, ok := extra[k].(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = Merge(bm, em)
				continue
			}
		}
		out[k] = extra[k]
	}
	return out
}

// Source is where a stack's charts come from and how they are applied:
// one for the whole stack, decided when its plan is made.
type Source struct {
	// Dir holds chart archives (<chart>-<version>.tgz) used instead of the
	// Helm repositories ("": the repositories).
	Dir string
	// SkipAwait applies charts without waiting for their workloads.
	SkipAwait bool
	// Rendering is set when the providers write YAML instead of applying:
	// Secrets with secret values are then left out of the files, and
	// charts that need a cluster to render come through the pipeline.
	Rendering bool
}

// Release is chart c released as name, from this source.
func (s Source) Release(name string, c Chart, values map[string]any) Release {
	return Release{Name: name, Chart: c, Dir: s.Dir, Values: values}
}

// Install registers a release as a Helm v4 Chart resource: the one way the
// components install a chart, so every chart is applied alike (its source,
// its null overrides, skip-await).
func Install(ctx *pulumi.Context, resource string, r Release, namespace string, src Source, opts ...pulumi.ResourceOption) (*helmv4.Chart, error) {
	if len(r.Patches) > 0 {
		// first: the other transforms may add outputs (a secret's hash)
		opts = append([]pulumi.ResourceOption{pulumi.Transforms([]pulumi.ResourceTransform{r.transform})}, opts...)
	}
	return helmv4.NewChart(ctx, resource, r.Args(namespace, src.SkipAwait), opts...)
}

// transform applies the patches to one of the Chart's children, whose
// inputs are what the chart rendered (a value that is not plain data is
// carried through as it is); the Chart itself is left alone.
func (r Release) transform(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
	group, kind, ok := ChildKind(a.Type)
	if !ok {
		return nil
	}
	obj := plain.FromInput(a.Props).(map[string]any)
	obj["apiVersion"], obj["kind"] = group, kind
	before := fmt.Sprintf("%#v", obj)
	for _, p := range r.Patches {
		p(obj)
	}
	if fmt.Sprintf("%#v", obj) == before {
		return nil
	}
	delete(obj, "apiVersion")
	delete(obj, "kind")
	props := plain.Map(obj)
	for _, k := range []string{"apiVersion", "kind"} {
		if v, had := a.Props[k]; had {
			props[k] = v
		}
	}
	return &pulumi.ResourceTransformResult{Props: props, Opts: a.Opts}
}

// ChildKind is the apiVersion and kind of a Kubernetes object's type
// token (kubernetes:apps/v1:Deployment, kubernetes:core/v1:Service); not
// of the provider's components (a Chart, a ConfigGroup, a Kustomization).
func ChildKind(token string) (apiVersion, kind string, ok bool) {
	parts := strings.Split(token, ":")
	if len(parts) != 3 || parts[0] != "kubernetes" {
		return "", "", false
	}
	for _, component := range []string{"helm.sh/", "yaml/", "kustomize/"} {
		if strings.HasPrefix(parts[1], component) {
			return "", "", false
		}
	}
	return strings.TrimPrefix(parts[1], "core/"), parts[2], true
}

// KeepCRDs leaves a release's CustomResourceDefinitions in the cluster
// when the release goes (a stack's last model removed, a destroy): a chart
// that ships its CRDs as templates (keda 2.20.2, keda-add-ons-http 0.15.0)
// would otherwise take every custom resource of those kinds in the
// cluster with it, the host's own too. Helm's
// `helm.sh/resource-policy: keep` is Helm's; the Chart's children are
// Pulumi resources, so it is their RetainOnDelete.
func KeepCRDs() pulumi.ResourceOption {
	return pulumi.Transforms([]pulumi.ResourceTransform{keepCRD})
}

func keepCRD(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
	if a.Type != "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition" {
		return nil
	}
	opts := a.Opts
	opts.RetainOnDelete = true
	return &pulumi.ResourceTransformResult{Props: a.Props, Opts: opts}
}
