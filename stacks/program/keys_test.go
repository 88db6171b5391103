package program

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/config"
)

// A model with its own key: the key is a field of its own in the API-key
// Secret (a secret input there, as the shared key stays in its own), the
// model's chart hands vLLM that field, and the gateway of a scaled-to-zero
// model is registered with the hash of that key on its pod template, in
// the clear (never the key).
func TestAModelsOwnKey(t *testing.T) {
	t.Parallel()
	c := stacktest.ServingNatron()
	shared, own := "shared-key-of-the-stack-"+pulumitest.SecretMarker, "own-key-of-the-model-"+pulumitest.SecretMarker
	c["serving"] = map[string]any{"apiKey": shared}
	stacktest.Model(c)["apiKey"] = own
	cfg := stacktest.Namespaced(stacktest.Encode(t, c))
	m, err := pulumitest.Run(Program, config.Namespace, "test", cfg, []string{config.Key("serving"), config.Key("models"), config.Key("storage")})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, r := range m.Resources() {
		switch {
		case r.Type == "kubernetes:core/v1:Secret" && strings.Contains(r.Name, "api-key"):
			data := r.Inputs["stringData"]
			if !data.IsSecret() {
				t.Fatalf("the API-key Secret's data is not secret: %v", data)
			}
			fields := data.SecretValue().Element.ObjectValue()
			got := fields[resource.PropertyKey("api-key-llama3-8b")]
			if got.IsSecret() {
				got = got.SecretValue().Element
			}
			if !got.IsString() || got.StringValue() != own {
				t.Errorf("the model's own key field: %v (fields %v)", got, fields)
			}
			checked++
		case r.Type == "kubernetes:helm.sh/v4:Chart" && strings.HasSuffix(r.Name, "-llama3-8b"):
			if got := at(r.Inputs, "values", "servingEngineSpec", "vllmApiKey", "secretKey"); got.StringValue() != "api-key-llama3-8b" {
				t.Errorf("vLLM reads field %q, want the model's own", got)
			}
			checked++
		case r.Type == "kubernetes:apps/v1:Deployment" && strings.HasSuffix(r.Name, "-gateway"):
			ann := at(r.Inputs, "spec", "template", "metadata", "annotations", serving.KeyHashAnnotation)
			if ann.IsSecret() || !ann.IsString() || ann.StringValue() != serving.HashKeys(own) {
				t.Errorf("the gateway's keys' hash: %v, want the model's own key's hash in the clear", ann)
			}
			checked++
		}
	}
	if checked != 3 {
		t.Errorf("checked %d resources, want the Secret, the model's chart and the gateway", checked)
	}
}

// at is the property at path, secrets unwrapped on the way (the last
// one is kept, so its secretness can be asked).
func at(pm resource.PropertyMap, path ...string) resource.PropertyValue {
	v := resource.NewObjectProperty(pm)
	for _, k := range path {
		if v.IsSecret() {
			v = v.SecretValue().Element
		}
		if !v.IsObject() {
			return resource.NewNullProperty()
		}
		v = v.ObjectValue()[resource.PropertyKey(k)]
	}
	return v
}
