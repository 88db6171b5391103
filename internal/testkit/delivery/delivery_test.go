package delivery

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(m map[string]any) *unstructured.Unstructured { return &unstructured.Unstructured{Object: m} }

func kustomization(name string, deps ...string) *unstructured.Unstructured {
	var d []any
	for _, n := range deps {
		d = append(d, map[string]any{"name": n})
	}
	return obj(map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"path": "./x/" + name, "dependsOn": d, "wait": true, "timeout": "2m"}})
}

// Kustomizations come after what they depend on; a cycle or a missing
// dependency is an error, as kustomize-controller never applies them.
func TestKustomizationsFollowDependsOn(t *testing.T) {
	ks, err := Kustomizations([]*unstructured.Unstructured{kustomization("c", "b"), kustomization("a"), kustomization("b", "a")})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, k := range ks {
		names = append(names, k.Name)
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) || !ks[0].Wait || ks[0].Timeout.Minutes() != 2 {
		t.Errorf("got %v %+v", names, ks[0])
	}
	if _, err := Kustomizations([]*unstructured.Unstructured{kustomization("a", "b"), kustomization("b", "a")}); err == nil {
		t.Error("a cycle was accepted")
	}
	if _, err := Kustomizations([]*unstructured.Unstructured{kustomization("a", "z")}); err == nil {
		t.Error("a missing dependency was accepted")
	}
}

// Within a wave, gitops-engine applies Secrets before Deployments and
// custom resources last; waves come first.
func TestSortTasksByWaveKindName(t *testing.T) {
	mk := func(kind, name, wave string) *unstructured.Unstructured {
		return obj(map[string]any{"kind": kind, "metadata": map[string]any{"name": name, "annotations": map[string]any{syncWave: wave}}})
	}
	objs := []*unstructured.Unstructured{mk("ExternalSecret", "e", "1"), mk("Deployment", "d", "1"), mk("Secret", "s", "1"), mk("Namespace", "n", "0"), mk("Job", "a", "1")}
	SortTasks(objs)
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind())
	}
	if want := []string{"Namespace", "Secret", "Deployment", "Job", "ExternalSecret"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestHealth(t *testing.T) {
	dep := func(status map[string]any) *unstructured.Unstructured {
		return obj(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d", "generation": int64(1)},
			"spec": map[string]any{"replicas": int64(1)}, "status": status})
	}
	es := func(status map[string]any) *unstructured.Unstructured {
		return obj(map[string]any{"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret", "metadata": map[string]any{"name": "e"}, "status": status})
	}
	for _, c := range []struct {
		name string
		o    *unstructured.Unstructured
		want string
	}{
		{"deployment not observed", dep(map[string]any{}), Progressing},
		{"deployment available", dep(map[string]any{"observedGeneration": int64(1), "replicas": int64(1), "updatedReplicas": int64(1), "availableReplicas": int64(1)}), Healthy},
		{"deployment waiting", dep(map[string]any{"observedGeneration": int64(1), "replicas": int64(1), "updatedReplicas": int64(1)}), Progressing},
		{"deployment past its deadline", dep(map[string]any{"observedGeneration": int64(1), "conditions": []any{map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}}}), Degraded},
		{"external secret new", es(nil), Progressing},
		{"external secret synced", es(map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}), Healthy},
		{"external secret failing", es(map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "False", "message": "no key"}}}), Degraded},
	} {
		h, err := Health(c.o)
		if err != nil || h == nil || h.Status != c.want {
			t.Errorf("%s: %+v %v, want %s", c.name, h, err, c.want)
		}
	}
	if h, _ := Health(obj(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}})); h != nil {
		t.Errorf("a ConfigMap has no health in Argo CD, got %+v", h)
	}
}

// KEDA with no active trigger scales to zero only a ScaledObject whose
// minimum is zero, raises a target below its minimum, and otherwise
// leaves the replicas to the HPA.
func TestKEDAReplicas(t *testing.T) {
	for _, c := range []struct {
		current, min, want int32
		act                bool
	}{
		{1, 0, 0, true}, {3, 0, 0, true}, {0, 0, 0, false},
		{0, 1, 1, true}, {1, 2, 2, true}, {1, 1, 1, false}, {4, 1, 4, false},
	} {
		if got, act := KEDAReplicas(c.current, c.min); got != c.want || act != c.act {
			t.Errorf("KEDAReplicas(%d, %d) = %d, %v; want %d, %v", c.current, c.min, got, act, c.want, c.act)
		}
	}
}
