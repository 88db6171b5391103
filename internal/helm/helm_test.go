package helm

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	helmv4 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/helm/v4"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var pinned = Chart{Name: "keda", Version: "2.20.2", Repo: "https://kedacore.github.io/charts", Images: []string{"ghcr.io/kedacore/keda"}}

func TestOverride(t *testing.T) {
	t.Parallel()
	got := pinned.With(Chart{Version: "2.21.0"})
	want := Chart{Name: "keda", Version: "2.21.0", Repo: pinned.Repo, Images: pinned.Images}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("override (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(pinned, pinned.With(Chart{})); diff != "" {
		t.Errorf("an empty override changed the pin:\n%s", diff)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	p := field.NewPath("serving").Child("charts", "keda")
	errs := Chart{Version: "latest", Repo: "http://charts.example"}.Validate(p, "2.20.2")
	want := []string{
		`serving.charts.keda.version: must be a chart version such as 2.20.2, got "latest"`,
		`serving.charts.keda.repo: must be an https:// or oci:// Helm repository, got "http://charts.example"`,
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Field+": "+e.Detail)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	for _, ok := range []Chart{{}, {Version: "v26.7.0", Repo: "oci://registry.example/charts"}, {Version: "0.1.12-rc.1"}} {
		if errs := ok.Validate(p, "1.0.0"); len(errs) != 0 {
			t.Errorf("%+v refused: %v", ok, errs)
		}
	}
}

// A release comes from its repository at the pinned version, or from the
// local archive when a chart directory is set (then with no version or
// repository: Helm would look the chart up remotely).
func TestArgs(t *testing.T) {
	t.Parallel()
	remote := Release{Name: "keda", Chart: pinned, Values: map[string]any{"a": 1.0}}.Args("keda", true)
	want := &helmv4.ChartArgs{
		Chart: pulumi.String("keda"), Version: pulumi.String("2.20.2"),
		RepositoryOpts: &helmv4.RepositoryOptsArgs{Repo: pulumi.String(pinned.Repo)},
		Name:           pulumi.String("keda"), Namespace: pulumi.String("keda"),
		Values: pulumi.Map{"a": pulumi.Int(1)}, SkipAwait: pulumi.Bool(true),
	}
	if diff := cmp.Diff(want, remote); diff != "" {
		t.Errorf("remote chart (-want +got):\n%s", diff)
	}
	local := Release{Name: "keda", Chart: pinned, Dir: "/charts"}.Args("keda", false)
	if local.Chart != pulumi.String("/charts/keda-2.20.2.tgz") || local.Version != nil || local.RepositoryOpts != nil {
		t.Errorf("local chart: %v %v %v", local.Chart, local.Version, local.RepositoryOpts)
	}
}

// The escape hatch merges maps key by key; anything else replaces.
func TestMerge(t *testing.T) {
	t.Parallel()
	base := map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "1", "memory": "1Gi"}}, "tolerations": []any{"a"}}
	got := Merge(base, map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "2Gi"}}, "tolerations": []any{"b"}, "extra": true})
	want := map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "1", "memory": "2Gi"}}, "tolerations": []any{"b"}, "extra": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merge (-want +got):\n%s", diff)
	}
	if base["resources"].(map[string]any)["limits"].(map[string]any)["memory"] != "1Gi" {
		t.Error("merge changed its input")
	}
	if got := Merge(nil, map[string]any{"x": 1}); got["x"] != 1 {
		t.Errorf("merge over nothing: %v", got)
	}
}

// Nil leaves delete a chart default; Pulumi would drop them from the
// values map, so they travel as a values file of nulls.
func TestNulls(t *testing.T) {
	t.Parallel()
	r := Release{Values: map[string]any{
		"labels": map[string]any{"mine": "x", "environment": nil, "release": nil},
		"keep":   map[string]any{"a": 1.0},
		"gone":   nil,
	}}
	want := "gone: null\nlabels:\n  environment: null\n  release: null\n"
	if got := r.Nulls(); got != want {
		t.Errorf("nulls file:\n%s\nwant:\n%s", got, want)
	}
	args := r.Args("ns", false)
	files, ok := args.ValueYamlFiles.(pulumi.AssetOrArchiveArray)
	if !ok || len(files) != 1 || files[0].(pulumi.Asset).Text() != want {
		t.Errorf("values files %#v, want the nulls file", args.ValueYamlFiles)
	}
	if (Release{Values: map[string]any{"a": map[string]any{"b": 1.0}}}).Nulls() != "" {
		t.Error("a release without nil leaves has a nulls file")
	}
	if (Release{Values: map[string]any{"a": map[string]any{"b": 1.0}}}).Args("ns", false).ValueYamlFiles != nil {
		t.Error("a release without nil leaves sends a values file")
	}
}

// The patches apply to a Chart's children as the engine hands them over
// (a value that is no plain data, such as a secret another transform
// added, carried through untouched), never to the Chart itself.
func TestPatchTransform(t *testing.T) {
	t.Parallel()
	rel := Release{Name: "r", Patches: []Patch{func(o map[string]any) {
		if o["kind"] == "Deployment" {
			o["spec"].(map[string]any)["replicas"] = 3
		}
	}}}
	if res := rel.transform(context.Background(), &pulumi.ResourceTransformArgs{Type: "kubernetes:helm.sh/v4:Chart",
		Props: pulumi.Map{"values": pulumi.Map{"spec": pulumi.Map{}}}}); res != nil {
		t.Errorf("the Chart itself was patched: %v", res.Props)
	}
	hash := pulumi.ToSecret(pulumi.String("h")).(pulumi.StringOutput)
	props := pulumi.Map{"spec": pulumi.Map{"replicas": pulumi.Int(1), "template": pulumi.Map{"metadata": pulumi.Map{"annotations": pulumi.Map{"k": hash}}}}}
	res := rel.transform(context.Background(), &pulumi.ResourceTransformArgs{Type: "kubernetes:apps/v1:Deployment", Props: props})
	if res == nil {
		t.Fatal("the Deployment was not patched")
	}
	spec := res.Props["spec"].(pulumi.Map)
	if spec["replicas"] != pulumi.Int(3) {
		t.Errorf("replicas %v, want the patch's 3", spec["replicas"])
	}
	if got := spec["template"].(pulumi.Map)["metadata"].(pulumi.Map)["annotations"].(pulumi.Map)["k"]; got != hash {
		t.Errorf("the secret output was not carried through: %#v", got)
	}
	if _, added := res.Props["kind"]; added {
		t.Error("the transform added a kind the engine did not give")
	}
	if rel.transform(context.Background(), &pulumi.ResourceTransformArgs{Type: "kubernetes:core/v1:Service", Props: pulumi.Map{"spec": pulumi.Map{}}}) != nil {
		t.Error("a Service the patch leaves alone came back changed")
	}
}

// A release kept with KeepCRDs leaves its CRDs behind, and only them.
func TestKeepCRDs(t *testing.T) {
	t.Parallel()
	for typ, keep := range map[string]bool{
		"kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition": true,
		"kubernetes:apps/v1:Deployment":                               false,
		"kubernetes:keda.sh/v1alpha1:ScaledObject":                    false,
		"kubernetes:helm.sh/v4:Chart":                                 false,
	} {
		got := keepCRD(context.Background(), &pulumi.ResourceTransformArgs{Type: typ, Props: pulumi.Map{}})
		if kept := got != nil && got.Opts.RetainOnDelete; kept != keep {
			t.Errorf("%s: retained on delete %v, want %v", typ, kept, keep)
		}
	}
}
