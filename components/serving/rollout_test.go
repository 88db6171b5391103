package serving_test

import (
	"context"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/plain"
)

// A Deployment whose proxy holds a key carries the key's hash on its pod
// template: a new key is a new template, and the Deployment rolls its
// pods onto it (a proxy reads its key once, at start). The hash is not
// the key, and is not a Pulumi secret, so that a render's files and a
// preview's diff hold no secret in plain text (the keys are long enough,
// MinKeyLength, that it cannot be reversed).
func TestAChangedKeyRollsThePods(t *testing.T) {
	t.Parallel()
	dep := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "engine"},
		"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "x"}, "annotations": map[string]any{"keep": "me"}},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}}}}}
	annotation := func(key string) (string, bool) {
		t.Helper()
		k := pulumi.ToSecret(pulumi.String(key)).(pulumi.StringOutput)
		res := serving.RollOnKeyChange(serving.KeyHash(k))(context.Background(), &pulumi.ResourceTransformArgs{Type: "kubernetes:apps/v1:Deployment", Props: plain.Map(dep)})
		if res == nil {
			t.Fatal("the Deployment's template was left without the keys' hash")
		}
		meta := res.Props["spec"].(pulumi.Map)["template"].(pulumi.Map)["metadata"].(pulumi.Map)
		ann := meta["annotations"].(pulumi.Map)
		if ann["keep"] != pulumi.String("me") {
			t.Errorf("the template's own annotations are gone: %v", ann)
		}
		v, secret := await(t, ann[serving.KeyHashAnnotation].(pulumi.StringOutput))
		return v, secret
	}
	a, secret := annotation("first-key")
	b, _ := annotation("second-key")
	if a == b || a != serving.HashKeys("first-key") || a == "first-key" {
		t.Errorf("hash of the first key %q, of the second %q: want each key's own hash, never the key", a, b)
	}
	if secret {
		t.Error("the keys' hash is a secret: a render would write a secret in plain text")
	}
	if res := serving.RollOnKeyChange(serving.KeyHash())(context.Background(), &pulumi.ResourceTransformArgs{Type: "kubernetes:core/v1:Service", Props: pulumi.Map{}}); res != nil {
		t.Error("a Service got the keys' hash")
	}
}

// await resolves an output outside a program: its value, and whether it
// is secret.
func await(t *testing.T, o pulumi.StringOutput) (string, bool) {
	t.Helper()
	ch := make(chan string, 1)
	o.ApplyT(func(v string) string { ch <- v; return v })
	select {
	case v := <-ch:
		return v, pulumi.IsSecret(o)
	case <-time.After(10 * time.Second):
		t.Fatal("the output never resolved")
	}
	return "", false
}
