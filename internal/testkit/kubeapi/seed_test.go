package kubeapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/proc"
)

func TestMain(m *testing.M) { proc.Main(m) }

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, maximum: 10}
`

// Servers started from a seed have what its Prepare made, prepared once:
// a custom resource of its CRD is created (and validated against its
// schema) the moment the server is up, and each server's objects are its
// own.
func TestSeededServersStartWithTheSeedsState(t *testing.T) {
	prepared := 0
	seed := &Seed{Name: "widgets", Prepare: func(t testing.TB, s *Server) {
		prepared++
		f := filepath.Join(t.TempDir(), "crd.yaml")
		if err := os.WriteFile(f, []byte(widgetCRD), 0o600); err != nil {
			t.Fatal(err)
		}
		s.ApplyCRDs(t, f)
	}}
	widget := func(name string, size int) map[string]any {
		return map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": "default"}, "spec": map[string]any{"size": size}}
	}
	a := Start(t, WithSeed(seed))
	b := Start(t, WithSeed(seed))
	if prepared != 1 {
		t.Errorf("the seed was prepared %d times, want once", prepared)
	}
	a.Create(t, widget("only-in-a", 3))
	if out, err := b.TryCreate(t, widget("too-big", 11)); err == nil || !strings.Contains(out, "spec.size") {
		t.Errorf("the seeded CRD's schema did not refuse size 11: %v\n%s", err, out)
	}
	if out := b.Kubectl(t, "get", "widgets", "-A", "-o", "name"); strings.Contains(out, "only-in-a") {
		t.Errorf("one seeded server sees another's object:\n%s", out)
	}
}
