package program

import (
	"testing"

	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/config"
)

// With platform.skipAwait, nothing the program registers itself waits on
// pods that may never run (a cluster without kubelets, as in CI): every
// Deployment, DaemonSet, StatefulSet, Service and Ingress carries
// pulumi.com/skipAwait, which pulumi-kubernetes reads (await.go,
// skipAwaitAnnotation). A Service with a selector would otherwise wait
// ten minutes for its endpoints.
func TestSkipAwaitReachesEveryAwaitedObject(t *testing.T) {
	t.Parallel()
	c := stacktest.ServingNatron()
	c["platform"] = map[string]any{"skipAwait": true}
	stacktest.Model(c)["hostname"] = "llama.acme.example"
	c["models"] = append(c["models"].([]any), map[string]any{"name": "tiny", "runtime": "ollama", "source": "llama3.2:3b", "hostname": "tiny.acme.example"})
	regs := c["policies"].(map[string]any)["allowedRegistries"].(map[string]any)
	regs["registries"] = append(regs["registries"].([]any), "docker.io/ollama")
	m, err := pulumitest.Run(Program, config.Namespace, "test", stacktest.Namespaced(stacktest.Encode(t, c)), nil)
	if err != nil {
		t.Fatal(err)
	}
	awaited := map[string]bool{"kubernetes:apps/v1:Deployment": true, "kubernetes:apps/v1:DaemonSet": true, "kubernetes:apps/v1:StatefulSet": true,
		"kubernetes:core/v1:Service": true, "kubernetes:networking.k8s.io/v1:Ingress": true}
	checked := map[string]int{}
	for _, r := range m.Resources() {
		if !awaited[r.Type] {
			continue
		}
		checked[r.Type]++
		if got := at(r.Inputs, "metadata", "annotations", kube.SkipAwaitAnnotation); !got.IsString() || got.StringValue() != "true" {
			t.Errorf("%s %s waits for its pods: annotations %v", r.Type, r.Name, at(r.Inputs, "metadata", "annotations"))
		}
	}
	// the gateway, its wake Service, both models' Ingresses
	if checked["kubernetes:apps/v1:Deployment"] == 0 || checked["kubernetes:core/v1:Service"] == 0 || checked["kubernetes:networking.k8s.io/v1:Ingress"] < 2 {
		t.Errorf("checked %v: want the gateway, the wake Service and both Ingresses", checked)
	}
}
