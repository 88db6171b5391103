package natron

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// The objects must fit the real upstream CRDs (Cluster API v1.14, Metal3
// v1.13): every field known, every required field present, enums and
// bounds respected. A real API server check follows in the engine tests.
func TestBareMetalObjectsMatchUpstreamCRDs(t *testing.T) {
	t.Parallel()
	shared := pulumitest.SharedDir(t)
	crds := map[string]string{
		"MachineDeployment":     "cluster-api/cluster.x-k8s.io_machinedeployments.yaml",
		"KubeadmConfigTemplate": "cluster-api/bootstrap.cluster.x-k8s.io_kubeadmconfigtemplates.yaml",
		"Metal3MachineTemplate": "cluster-api-provider-metal3/infrastructure.cluster.x-k8s.io_metal3machinetemplates.yaml",
	}
	for _, spec := range []gpupool.Spec{
		{Name: "infer", SKU: "h100-80gb-x8", MaxNodes: 4, Labels: map[string]string{"team": "ml"}},
		{Name: "train", SKU: "a100-80gb-x8", MinNodes: 1, MaxNodes: 2, MIGProfile: "MIG7g"},
	} {
		objs := Objects(testCluster, resolved(t, spec))
		for _, obj := range []map[string]any{objs.Bootstrap, objs.Infrastructure, objs.MachineDeployment} {
			kind := obj["kind"].(string)
			schema := crdSchema(t, filepath.Join(shared, "crds", crds[kind]), obj["apiVersion"].(string))
			var errs []string
			checkSchema(&errs, kind, stripMeta(obj), schema)
			if len(errs) > 0 {
				t.Errorf("%s of pool %s does not fit the upstream CRD:\n  %s", kind, spec.Name, strings.Join(errs, "\n  "))
			}
		}
	}
}

// Without the conversion webhook, a v1beta1 object loses its refs' apiGroup:
// make sure the check above would catch v1beta1-style refs.
func TestSchemaCheckCatchesV1beta1Refs(t *testing.T) {
	t.Parallel()
	shared := pulumitest.SharedDir(t)
	schema := crdSchema(t, filepath.Join(shared, "crds/cluster-api/cluster.x-k8s.io_machinedeployments.yaml"), MachineDeploymentAPIVersion)
	md := Objects(testCluster, resolved(t, gpupool.Spec{Name: "infer", SKU: "h100-80gb-x8", MaxNodes: 1})).MachineDeployment
	ref := md["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["infrastructureRef"].(map[string]any)
	ref["apiVersion"] = "infrastructure.cluster.x-k8s.io/v1beta1"
	delete(ref, "apiGroup")
	var errs []string
	checkSchema(&errs, "MachineDeployment", stripMeta(md), schema)
	joined := strings.Join(errs, "\n")
	if !strings.Contains(joined, "infrastructureRef.apiVersion: unknown field") || !strings.Contains(joined, "infrastructureRef.apiGroup: required") {
		t.Fatalf("schema check missed v1beta1-style refs, got:\n%s", joined)
	}
}

func stripMeta(obj map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range obj {
		if k != "metadata" { // ObjectMeta is validated by the API server, not the CRD
			out[k] = v
		}
	}
	return out
}

func crdSchema(t *testing.T, path, apiVersion string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read CRD: %v", err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatalf("parse CRD %s: %v", path, err)
	}
	version := apiVersion[strings.LastIndex(apiVersion, "/")+1:]
	for _, v := range crd["spec"].(map[string]any)["versions"].([]any) {
		v := v.(map[string]any)
		if v["name"] == version {
			return v["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
		}
	}
	t.Fatalf("%s serves no %s", path, version)
	return nil
}

// checkSchema is a structural OpenAPI v3 check of the subset CRDs use.
func checkSchema(errs *[]string, path string, v any, s map[string]any) {
	fail := func(format string, args ...any) { *errs = append(*errs, path+": "+fmt.Sprintf(format, args...)) }
	if s["x-kubernetes-int-or-string"] == true {
		switch v.(type) {
		case int, int64, float64, string:
		default:
			fail("want int or string, got %T", v)
		}
		return
	}
	switch s["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			fail("want object, got %T", v)
			return
		}
		props, _ := s["properties"].(map[string]any)
		for _, r := range asSlice(s["required"]) {
			if _, ok := m[r.(string)]; !ok {
				*errs = append(*errs, path+"."+r.(string)+": required")
			}
		}
		for k, val := range m {
			if ps, ok := props[k].(map[string]any); ok {
				checkSchema(errs, path+"."+k, val, ps)
			} else if ap, ok := s["additionalProperties"].(map[string]any); ok {
				checkSchema(errs, path+"."+k, val, ap)
			} else if s["x-kubernetes-preserve-unknown-fields"] != true {
				*errs = append(*errs, path+"."+k+": unknown field")
			}
		}
	case "array":
		items, ok := v.([]any)
		if !ok {
			fail("want array, got %T", v)
			return
		}
		for i, it := range items {
			checkSchema(errs, fmt.Sprintf("%s[%d]", path, i), it, s["items"].(map[string]any))
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			fail("want string, got %T", v)
			return
		}
		if enum := asSlice(s["enum"]); len(enum) > 0 && !slices.Contains(enum, any(str)) {
			fail("%q not in %v", str, enum)
		}
		if ml, ok := s["maxLength"].(float64); ok && float64(len(str)) > ml {
			fail("longer than %v", ml)
		}
	case "integer":
		n, ok := v.(int)
		if !ok {
			fail("want integer, got %T", v)
			return
		}
		if mn, ok := s["minimum"].(float64); ok && float64(n) < mn {
			fail("below minimum %v", mn)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			fail("want boolean, got %T", v)
		}
	}
}

func asSlice(v any) []any { s, _ := v.([]any); return s }
