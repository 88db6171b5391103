package tests

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// plainTextHits lists every resource input that carries s outside a secret.
func plainTextHits(m *pulumitest.Mocks, s string) []string {
	var hits []string
	var walk func(name string, v resource.PropertyValue)
	walk = func(name string, v resource.PropertyValue) {
		switch {
		case v.IsSecret():
			return
		case v.IsString():
			if strings.Contains(v.StringValue(), s) {
				hits = append(hits, name)
			}
		case v.IsObject():
			for k, e := range v.ObjectValue() {
				walk(name+"."+string(k), e)
			}
		case v.IsArray():
			for _, e := range v.ArrayValue() {
				walk(name+"[]", e)
			}
		}
	}
	for _, r := range m.Resources() {
		walk(r.Name, resource.NewObjectProperty(r.Inputs))
	}
	return hits
}

func TestServingOnAKSUnderMocks(t *testing.T) {
	t.Parallel()
	m, _ := runStack(t, "prod")

	chart, ok := m.ByName(chartType, "serving-llama3-70b")
	require.True(t, ok, "no vllm-stack release for llama3-70b")
	in := chart.Inputs
	assert.Equal(t, "vllm-stack", str(in, "chart"))
	assert.Equal(t, "0.1.12", str(in, "version"))
	assert.Equal(t, "https://vllm-project.github.io/production-stack", str(in, "repositoryOpts", "repo"))
	assert.Equal(t, "models", str(in, "namespace"))
	model := dig(in, "values", "servingEngineSpec", "modelSpec").ArrayValue()[0].ObjectValue()
	assert.Equal(t, 4.0, model["requestGPU"].NumberValue(), "GPU requests equal the tensor-parallel size")
	assert.Contains(t, model["nodeSelectorTerms"].String(), "h100x8")
	assert.Equal(t, "", model["runtimeClassName"].StringValue(), "AKS's default runtime exposes GPUs")
	assert.Equal(t, "gpu-node-pools-api-key", str(in, "values", "servingEngineSpec", "vllmApiKey", "secretName"))
	assert.NotContains(t, dig(in, "values", "servingEngineSpec", "tolerations").String(), "scalesetpriority")

	ing, ok := m.ByName("kubernetes:networking.k8s.io/v1:Ingress", "serving-llama3-70b-ingress")
	require.True(t, ok)
	assert.Equal(t, "letsencrypt-prod", str(ing.Inputs, "metadata", "annotations", "cert-manager.io/cluster-issuer"))
	assert.Contains(t, dig(ing.Inputs, "spec", "tls").String(), "llama70b.acme.example")

	np, _ := m.ByName("kubernetes:networking.k8s.io/v1:NetworkPolicy", "serving-llama3-70b-netpol")
	from := dig(np.Inputs, "spec", "ingress").String()
	assert.Contains(t, from, "ingress-nginx")
	assert.Contains(t, from, "monitoring")

	cj, ok := m.ByName("kubernetes:batch/v1:CronJob", "serving-batch-embed-nightly")
	require.True(t, ok)
	assert.Equal(t, "0 2 * * *", str(cj.Inputs, "spec", "schedule"))
	assert.Equal(t, "Forbid", str(cj.Inputs, "spec", "concurrencyPolicy"))
	pod := dig(cj.Inputs, "spec", "jobTemplate", "spec", "template", "spec")
	assert.Equal(t, "gpu-batch", pod.ObjectValue()["priorityClassName"].StringValue())
	assert.Contains(t, pod.String(), "nvidia.com/gpu")
	assert.True(t, dig(cj.Inputs, "spec", "jobTemplate", "spec", "activeDeadlineSeconds").IsNumber())

	sa, _ := m.ByName("kubernetes:core/v1:ServiceAccount", "serving-download-sa")
	assert.Equal(t, "9a4d1c9e-3b6f-4d5a-8f2e-1c7b5e0d4a21", str(sa.Inputs, "metadata", "annotations", "azure.workload.identity/client-id"))

	// The generated API key is a secret everywhere it goes.
	secret, _ := m.ByName("kubernetes:core/v1:Secret", "serving-api-key-secret")
	sd := secret.Inputs["stringData"]
	require.True(t, sd.IsSecret() || dig(secret.Inputs, "stringData", "api-key").IsSecret(), "API key in the Secret must be a Pulumi secret, got %v", sd)
	assert.Empty(t, plainTextHits(m, pulumitest.GeneratedSecret), "generated API key in plain text")
}

func TestServingOnBareMetalUnderMocks(t *testing.T) {
	t.Parallel()
	m, _ := runStack(t, "dev")
	for _, c := range []string{"serving-llama3-8b"} {
		r, _ := m.ByName(chartType, c)
		assert.Contains(t, str(r.Inputs, "chart"), "vllm-stack", "%s chart", c)
	}
	_, generated := m.ByName("random:index/randomPassword:RandomPassword", "serving-api-key")
	assert.False(t, generated, "the dev stack brings its API key as a config secret")
	chart, ok := m.ByName(chartType, "serving-llama3-8b")
	require.True(t, ok)
	model := dig(chart.Inputs, "values", "servingEngineSpec", "modelSpec").ArrayValue()[0].ObjectValue()
	assert.Equal(t, "nvidia", model["runtimeClassName"].StringValue(), "the GPU operator's RuntimeClass")
	for _, s := range []string{"serving-storage-secret", "serving-api-key-secret"} {
		_, written := m.ByName("kubernetes:core/v1:Secret", s)
		assert.False(t, written, "%s would be rendered to a file in plain text", s)
	}
	job, _ := m.ByName("kubernetes:batch/v1:Job", "serving-llama3-8b-download")
	assert.Contains(t, dig(job.Inputs, "spec").String(), "src:models/meta-llama/Llama-3.1-8B-Instruct")
	assert.Empty(t, plainTextHits(m, pulumitest.SecretMarker), "a config secret in plain text")
}
