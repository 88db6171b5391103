package program

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/plan"
	"github.com/natron/gpu-node-pools/stacks/target/natron"
)

func TestValidConfigsLoad(t *testing.T) {
	t.Parallel()
	rootJob := stacktest.ServingNatron()
	stacktest.Batch(rootJob)["security"] = map[string]any{"runAsUser": 0, "capabilities": []any{"CHOWN"}, "writableRootFilesystem": true}
	rootJob["podSecurity"] = map[string]any{"batch": map[string]any{"level": "baseline", "reason": "vendor image runs as root, ML-412"}}
	for name, c := range map[string]map[string]any{"aks": stacktest.AKS(), "natron": stacktest.Natron(), "aks+serving": stacktest.ServingAKS(), "natron+serving": stacktest.ServingNatron(), "natron+root batch job": rootJob} {
		p, err := plan.Load(stacktest.Encode(t, c), "test")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(p.Pools) == 0 || !strings.HasPrefix(name, string(p.Target.Name())) {
			t.Fatalf("%s: resolved %+v", name, p)
		}
	}
}

// Every rule of the contract: the message names the key path, and the
// program registers nothing for an invalid config.
func TestValidationRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		base   func() map[string]any
		mutate func(c map[string]any)
		want   string // "<key path>: <message start>"
	}{
		// target and blocks
		{"target missing", stacktest.AKS, func(c map[string]any) { delete(c, "target") }, `gpu-node-pools:target: required; allowed values: aks, natron`},
		{"target unknown", stacktest.AKS, func(c map[string]any) { c["target"] = "gke" }, `gpu-node-pools:target: must be one of aks, natron, got "gke"`},
		{"aks block missing", stacktest.AKS, func(c map[string]any) { delete(c, "aks") }, `gpu-node-pools:aks: required when target is aks`},
		{"aks block empty", stacktest.AKS, func(c map[string]any) { c["aks"] = map[string]any{} }, `gpu-node-pools:aks: required when target is aks`},
		{"natron block missing", stacktest.Natron, func(c map[string]any) { delete(c, "natron") }, `gpu-node-pools:natron: required when target is natron`},
		{"aks block on natron", stacktest.Natron, func(c map[string]any) { c["aks"] = stacktest.AKS()["aks"] }, `gpu-node-pools:aks: only used when target is aks, got target "natron"`},
		{"natron block on aks", stacktest.AKS, func(c map[string]any) { c["natron"] = stacktest.Natron()["natron"] }, `gpu-node-pools:natron: only used when target is natron, got target "aks"`},
		{"protect not a bool", stacktest.AKS, func(c map[string]any) { c["protect"] = "yes" }, `gpu-node-pools:protect: must be true, false or auto, got "yes"`},
		{"renderDir blank", stacktest.AKS, func(c map[string]any) { c["renderDir"] = "  " }, `gpu-node-pools:renderDir: must be a directory path`},
		// strict decoding
		{"unknown pool key", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["maxNode"] = 3 }, `gpu-node-pools:pools[0].maxNode: unknown key (did you mean maxNodes?)`},
		{"unknown aks key", stacktest.AKS, func(c map[string]any) { c["aks"].(map[string]any)["subscription"] = "x" }, `gpu-node-pools:aks.subscription: unknown key`},
		{"unknown nested natron key", stacktest.Natron, func(c map[string]any) { c["natron"].(map[string]any)["image"].(map[string]any)["urll"] = "x" }, `gpu-node-pools:natron.image.urll: unknown key (did you mean url?)`},
		{"wrong type", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 1)["minNodes"] = "two" }, `gpu-node-pools:pools[1].minNodes: must be a whole number, got a JSON string`},
		{"wrong type in labels", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["labels"] = map[string]any{"team": 3} }, `gpu-node-pools:pools[0].labels.team: must be a string, got a JSON number`},
		{"pools not a list", stacktest.AKS, func(c map[string]any) { c["pools"] = map[string]any{"name": "a"} }, `gpu-node-pools:pools: must be a list of pools, got an object`},
		{"pools missing", stacktest.AKS, func(c map[string]any) { delete(c, "pools") }, `gpu-node-pools:pools: required: at least one pool`},
		{"pools empty", stacktest.AKS, func(c map[string]any) { c["pools"] = []any{} }, `gpu-node-pools:pools: required: at least one pool`},
		// pool names and SKUs
		{"name uppercase", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["name"] = "A100" }, `gpu-node-pools:pools[0].name: must be lowercase letters and digits, start with a letter, at most 12 characters, got "A100"`},
		{"name starts with digit", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["name"] = "1gpu" }, `gpu-node-pools:pools[0].name: must be lowercase`},
		{"name too long", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["name"] = "abcdefghijklm" }, `gpu-node-pools:pools[0].name: must be lowercase letters and digits, start with a letter, at most 12 characters, got "abcdefghijklm"`},
		{"name duplicate", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 1)["name"] = "a100" }, `gpu-node-pools:pools[1].name: must be unique, pools[0] has the same name, got "a100"`},
		{"sku of the other target", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["sku"] = "h100-80gb-x8" }, `gpu-node-pools:pools[0].sku: unknown for target aks; known: Standard_NC12s_v3, `},
		{"sku unknown on natron", stacktest.Natron, func(c map[string]any) { stacktest.Pool(c, 0)["sku"] = "h200-x8" }, `gpu-node-pools:pools[0].sku: unknown for target natron; known: a100-40gb-x8, a100-80gb-x4, a100-80gb-x8, h100-80gb-x4, h100-80gb-x8, got "h200-x8"`},
		// autoscaling bounds
		{"minNodes negative", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["minNodes"] = -1 }, `gpu-node-pools:pools[0].minNodes: must be >= 0 (0 scales to zero), got -1`},
		{"maxNodes below minNodes", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 1)["minNodes"] = 2; stacktest.Pool(c, 1)["maxNodes"] = 1 }, `gpu-node-pools:pools[1].maxNodes: must be >= minNodes (2), got 1`},
		{"maxNodes too large", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["maxNodes"] = 1001 }, `gpu-node-pools:pools[0].maxNodes: must be <= 1000, got 1001`},
		{"maxNodes missing", stacktest.AKS, func(c map[string]any) { delete(stacktest.Pool(c, 0), "maxNodes") }, `gpu-node-pools:pools[0].maxNodes: must be between 1 and 1000, got 0`},
		// AKS-only keys
		{"spot on bare metal", stacktest.Natron, func(c map[string]any) { stacktest.Pool(c, 0)["spot"] = true }, `gpu-node-pools:pools[0].spot: must be false on target natron`},
		{"an aks block on bare metal", stacktest.Natron, func(c map[string]any) { stacktest.Pool(c, 0)["aks"] = map[string]any{"zones": []any{"1"}} }, `gpu-node-pools:pools[0].aks: only used when target is aks, got "natron"`},
		{"spotMaxPrice on bare metal", stacktest.Natron, func(c map[string]any) { stacktest.Pool(c, 0)["spotMaxPrice"] = 1.5 }, `gpu-node-pools:pools[0].spotMaxPrice: only used when target is aks (gpu-node-pools:pools[0].aks.spotMaxPrice), got 1.5`},
		{"zones on bare metal", stacktest.Natron, func(c map[string]any) { stacktest.Pool(c, 0)["zones"] = []any{"1"} }, `gpu-node-pools:pools[0].zones: only used when target is aks (gpu-node-pools:pools[0].aks.zones), got ["1"]`},
		{"osDiskSizeGB on bare metal", stacktest.Natron, func(c map[string]any) { stacktest.Pool(c, 0)["osDiskSizeGB"] = 200 }, `gpu-node-pools:pools[0].osDiskSizeGB: only used when target is aks`},
		{"spotMaxPrice without spot", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["aks"] = map[string]any{"spotMaxPrice": 0.5} }, `gpu-node-pools:pools[0].aks.spotMaxPrice: only with spot: true, got 0.5`},
		{"spotMaxPrice zero", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 1)["aks"] = map[string]any{"spotMaxPrice": 0} }, `gpu-node-pools:pools[1].aks.spotMaxPrice: must be -1 (up to the on-demand price) or a price > 0`},
		{"zone unknown", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["aks"] = map[string]any{"zones": []any{"1", "4"}} }, `gpu-node-pools:pools[0].aks.zones[1]: must be one of 1, 2, 3, got "4"`},
		{"zone repeated", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["aks"] = map[string]any{"zones": []any{"2", "2"}} }, `gpu-node-pools:pools[0].aks.zones[1]: must not repeat a zone, got "2"`},
		{"osDiskSizeGB too small", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["aks"] = map[string]any{"osDiskSizeGB": 16} }, `gpu-node-pools:pools[0].aks.osDiskSizeGB: must be between 30 and 2048, got 16`},
		{"unknown key in the aks block", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["aks"] = map[string]any{"zone": []any{"1"}} }, `gpu-node-pools:pools[0].aks.zone: unknown key`},
		{"a moved key set twice", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["zones"] = []any{"3"} },
			`gpu-node-pools:pools[0].zones: set in both gpu-node-pools:pools[0].zones and gpu-node-pools:pools[0].aks.zones: keep gpu-node-pools:pools[0].aks.zones, got ["3"]`},
		{"a moved key, still read, checked where it moved", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 1)["osDiskSizeGB"] = 16 }, `gpu-node-pools:pools[1].aks.osDiskSizeGB: must be between 30 and 2048, got 16`},
		// MIG
		{"MIG on a GPU without MIG", stacktest.AKS, func(c map[string]any) {
			stacktest.Pool(c, 0)["sku"] = "Standard_NC4as_T4_v3"
			stacktest.Pool(c, 0)["migProfile"] = "MIG1g"
		}, `gpu-node-pools:pools[0].migProfile: Standard_NC4as_T4_v3 has NVIDIA Tesla T4 GPUs, which do not support MIG`},
		{"MIG profile unknown", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["migProfile"] = "MIG5g" }, `gpu-node-pools:pools[0].migProfile: must be one of MIG1g, MIG2g, MIG3g, MIG4g, MIG7g, got "MIG5g"`},
		// labels
		{"label key invalid", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["labels"] = map[string]any{"bad key": "x"} }, `gpu-node-pools:pools[0].labels.bad key: must be a label key`},
		{"label prefix invalid", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["labels"] = map[string]any{"Acme/team": "x"} }, `gpu-node-pools:pools[0].labels.Acme/team: must be a label key`},
		{"label value invalid", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["labels"] = map[string]any{"team": "ml ops"} }, `gpu-node-pools:pools[0].labels.team: value must be empty or 1-63`},
		{"label value too long", stacktest.AKS, func(c map[string]any) {
			stacktest.Pool(c, 0)["labels"] = map[string]any{"team": strings.Repeat("a", 64)}
		}, `gpu-node-pools:pools[0].labels.team: value must be empty or 1-63`},
		{"label overrides the GPU label", stacktest.AKS, func(c map[string]any) {
			stacktest.Pool(c, 0)["labels"] = map[string]any{"nvidia.com/gpu.present": "false"}
		}, `gpu-node-pools:pools[0].labels.nvidia.com/gpu.present: is set by the program or the platform`},
		{"label overrides the pool label", stacktest.Natron, func(c map[string]any) { stacktest.Pool(c, 0)["labels"] = map[string]any{"gpu.natron.cloud/pool": "x"} }, `gpu-node-pools:pools[0].labels.gpu.natron.cloud/pool: is set by the program or the platform`},
		{"label in AKS's namespace", stacktest.AKS, func(c map[string]any) {
			stacktest.Pool(c, 0)["labels"] = map[string]any{"kubernetes.azure.com/mode": "user"}
		}, `gpu-node-pools:pools[0].labels.kubernetes.azure.com/mode: is set by the program or the platform`},
		// GPU sharing
		{"timeSlicing of one", stacktest.AKS, func(c map[string]any) { stacktest.Pool(c, 0)["timeSlicing"] = 1 }, `gpu-node-pools:pools[0].timeSlicing: must be 0 (no sharing) or 2-48 pods per GPU, got 1`},
		{"timeSlicing with MIG", stacktest.AKS, func(c map[string]any) {
			stacktest.Pool(c, 0)["timeSlicing"] = 4
			stacktest.Pool(c, 0)["migProfile"] = "MIG1g"
		}, `gpu-node-pools:pools[0].timeSlicing: use either migProfile (hard partitions) or timeSlicing (shared GPUs), not both`},
		// platform block
		{"platform unknown key", stacktest.AKS, func(c map[string]any) { c["platform"] = map[string]any{"gpuStak": "x"} }, `gpu-node-pools:platform.gpuStak: unknown key (did you mean gpuStack?)`},
		{"gpu stack unknown", stacktest.AKS, func(c map[string]any) { c["platform"] = map[string]any{"gpuStack": "cuda"} }, `gpu-node-pools:platform.gpuStack: must be one of device-plugin, gpu-operator, got "cuda"`},
		{"gpu operator on AKS", stacktest.AKS, func(c map[string]any) { c["platform"] = map[string]any{"gpuStack": "gpu-operator"} }, `gpu-node-pools:platform.gpuStack: AKS node images ship the NVIDIA driver: use device-plugin on target aks`},
		{"nfd mode unknown", stacktest.Natron, func(c map[string]any) { c["platform"] = map[string]any{"nfd": "maybe"} }, `gpu-node-pools:platform.nfd: must be one of install, existing, got "maybe"`},
		{"nfd with the device plugin", stacktest.AKS, func(c map[string]any) { c["platform"] = map[string]any{"nfd": "install"} }, `gpu-node-pools:platform.nfd: only with gpuStack gpu-operator`},
		{"platform namespace invalid", stacktest.Natron, func(c map[string]any) { c["platform"] = map[string]any{"namespace": "GPU"} }, `gpu-node-pools:platform.namespace: must be a DNS label, got "GPU"`},
		{"chart version invalid", stacktest.AKS, func(c map[string]any) {
			c["platform"] = map[string]any{"charts": map[string]any{"dcgmExporter": map[string]any{"version": "latest"}}}
		}, `gpu-node-pools:platform.charts.dcgmExporter.version: must be a chart version such as 0.20.0, got "latest"`},
		{"chart repo not https", stacktest.AKS, func(c map[string]any) {
			c["platform"] = map[string]any{"charts": map[string]any{"devicePlugin": map[string]any{"repo": "http://charts.example"}}}
		}, `gpu-node-pools:platform.charts.devicePlugin.repo: must be an https:// or oci:// Helm repository`},
		{"chart dir missing", stacktest.Natron, func(c map[string]any) { c["platform"] = map[string]any{"chartDir": "/nonexistent/charts"} }, `gpu-node-pools:platform.chartDir: must be a directory of chart archives (or set GPU_NODE_POOLS_CHART_DIR), got "/nonexistent/charts"`},
		{"chart dir without the chart", stacktest.Natron, func(c map[string]any) { c["platform"] = map[string]any{"chartDir": "/"} }, `gpu-node-pools:platform.chartDir: has no gpu-operator-v26.7.0.tgz`},
		{"scrape interval invalid", stacktest.AKS, func(c map[string]any) {
			c["platform"] = map[string]any{"monitoring": map[string]any{"scrapeInterval": "15 seconds"}}
		}, `gpu-node-pools:platform.monitoring.scrapeInterval: must be a Prometheus duration such as 15s`},
		{"service monitor label invalid", stacktest.AKS, func(c map[string]any) {
			c["platform"] = map[string]any{"monitoring": map[string]any{"serviceMonitorLabels": map[string]any{"release": "kube prometheus"}}}
		}, `gpu-node-pools:platform.monitoring.serviceMonitorLabels.release: value must be empty or 1-63`},
		{"alert duration invalid", stacktest.AKS, func(c map[string]any) {
			c["platform"] = map[string]any{"alerts": map[string]any{"idleFor": "half an hour"}}
		}, `gpu-node-pools:platform.alerts.idleFor: must be a Prometheus duration such as 30m, got "half an hour"`},
		{"alert percent out of range", stacktest.AKS, func(c map[string]any) {
			c["platform"] = map[string]any{"alerts": map[string]any{"memoryUsedPercent": 120}}
		}, `gpu-node-pools:platform.alerts.memoryUsedPercent: must be a percentage between 0 and 100, got 120`},
		{"alert temperature out of range", stacktest.AKS, func(c map[string]any) {
			c["platform"] = map[string]any{"alerts": map[string]any{"temperatureCelsius": 200}}
		}, `gpu-node-pools:platform.alerts.temperatureCelsius: must be between 40 and 110 °C, got 200`},
		{"alert latency negative", stacktest.AKS, func(c map[string]any) {
			c["platform"] = map[string]any{"alerts": map[string]any{"latencyP99Seconds": -1}}
		}, `gpu-node-pools:platform.alerts.latencyP99Seconds: must be > 0 seconds, got -1`},
		{"extra values not an object", stacktest.AKS, func(c map[string]any) { c["platform"] = map[string]any{"values": map[string]any{"devicePlugin": "x"}} }, `gpu-node-pools:platform.values.devicePlugin: must be an object, got a JSON string "x"`},
		// models: the fit check and its advice
		{"70B on one GPU", stacktest.ServingNatron, func(c map[string]any) {
			stacktest.Model(c)["name"] = "llama3-70b"
			stacktest.Model(c)["parametersB"] = 70
		},
			`gpu-node-pools:models[0].tensorParallel: llama3-70b at maxModelLen 8192 needs 137 GiB (130 GiB of weights, 2.5 GiB of KV cache, 4.3 GiB for the runtime); tensorParallel 1 on pool infer gives 1 × 79 GiB × gpuMemoryUtilization 0.90 = 71 GiB; tensorParallel 4 fits, got 1`},
		{"tensorParallel not dividing the node", stacktest.ServingNatron, func(c map[string]any) { stacktest.Model(c)["tensorParallel"] = 3 }, `gpu-node-pools:models[0].tensorParallel: must divide the 8 GPUs of one infer node ([1 2 4 8])`},
		{"replicas beyond the pool", stacktest.ServingAKS, func(c map[string]any) { stacktest.Model(c)["maxReplicas"] = 5 }, `gpu-node-pools:models[0].maxReplicas: 5 replicas × tensorParallel 1 = 5 GPUs, pool a100 has at most 4 nodes × 1 GPUs = 4; lower maxReplicas to 4 or raise the pool's maxNodes, got 5`},
		{"model on an unknown pool", stacktest.ServingAKS, func(c map[string]any) { stacktest.Model(c)["pool"] = "gpu" }, `gpu-node-pools:models[0].pool: must name one of the pools (a100, h100spot), got "gpu"`},
		// the weights and who reaches a model
		{"checksum not a SHA-256", stacktest.ServingNatron, func(c map[string]any) { stacktest.Model(c)["checksums"] = map[string]any{"sha256": "abc"} },
			`gpu-node-pools:models[0].checksums.sha256: must be the manifest's SHA-256, 64 lowercase hex digits (sha256sum SHA256SUMS), got "abc"`},
		{"manifest outside the weights", stacktest.ServingNatron, func(c map[string]any) {
			stacktest.Model(c)["checksums"] = map[string]any{"sha256": strings.Repeat("0", 64), "manifest": "../SHA256SUMS"}
		}, `gpu-node-pools:models[0].checksums.manifest: must be a file name beside the weights, such as SHA256SUMS, got "../SHA256SUMS"`},
		{"a short shared key", stacktest.ServingNatron, func(c map[string]any) { c["serving"] = map[string]any{"apiKey": "hunter2"} },
			`gpu-node-pools:serving.apiKey: must be at least 32 characters, random (openssl rand -hex 24): its hash is in the pods' template in the clear, got "(secret)"`},
		{"a short model key", stacktest.ServingNatron, func(c map[string]any) { stacktest.Model(c)["apiKey"] = "hunter2" },
			`gpu-node-pools:models[0].apiKey: must be at least 32 characters`},
		{"remote code unpinned", stacktest.ServingNatron, func(c map[string]any) { stacktest.Model(c)["trustRemoteCode"] = true },
			`gpu-node-pools:models[0].checksums: required with trustRemoteCode`},
		{"ollama with checksums", stacktest.ServingNatron, func(c map[string]any) {
			c["models"] = append(c["models"].([]any), map[string]any{"name": "tiny", "runtime": "ollama", "source": "llama3.2:3b", "checksums": map[string]any{"sha256": strings.Repeat("0", 64)}})
		}, `gpu-node-pools:models[1].checksums: is for vLLM's weights store`},
		{"gitops over plain http", stacktest.ServingNatron, func(c map[string]any) {
			c["renderDir"] = "rendered"
			c["gitops"] = map[string]any{"repoURL": "http://github.com/acme/platform.git", "path": "clusters/acme"}
		}, `gpu-node-pools:gitops.repoURL: must be https://<host>/<owner>/<repo> or ssh://git@<host>/<owner>/<repo>`},
		{"operator owner of a core kind", stacktest.AKS, func(c map[string]any) {
			c["policies"] = map[string]any{"allowedRegistries": map[string]any{"operatorOwners": []any{"apps/DaemonSet"}}}
		}, `gpu-node-pools:policies.allowedRegistries.operatorOwners[0]: must be an API group and a kind`},
		{"model name too long", stacktest.ServingAKS, func(c map[string]any) { stacktest.Model(c)["name"] = "a-very-long-model-name-x" }, `gpu-node-pools:models[0].name: must be a DNS label of at most 21 characters`},
		{"model dtype unknown", stacktest.ServingAKS, func(c map[string]any) { stacktest.Model(c)["dtype"] = "fp4" }, `gpu-node-pools:models[0].dtype: must be one of auto, half, float16, bfloat16, float, float32, got "fp4"`},
		{"quantization as a dtype", stacktest.ServingAKS, func(c map[string]any) { stacktest.Model(c)["dtype"] = "fp8" },
			`gpu-node-pools:models[0].dtype: is a quantization, not a vLLM --dtype (one of auto, half, float16, bfloat16, float, float32): write quantization: fp8 (and dtype: auto), got "fp8"`},
		{"quantization unknown", stacktest.ServingAKS, func(c map[string]any) { stacktest.Model(c)["quantization"] = "int4" },
			`gpu-node-pools:models[0].quantization: must be one of awq, bitsandbytes, compressed-tensors, fp8, gptq, got "int4"`},
		{"fp8 on an A100", stacktest.ServingAKS, func(c map[string]any) {
			stacktest.Model(c)["quantization"] = "fp8"
			stacktest.Model(c)["dtype"] = "auto"
		},
			`gpu-node-pools:models[0].quantization: fp8 needs compute capability 8.9 or newer, the pool's NVIDIA A100 80GB PCIe has 8.0`},
		{"awq with bfloat16 activations", stacktest.ServingAKS, func(c map[string]any) { stacktest.Model(c)["quantization"] = "awq" },
			`gpu-node-pools:models[0].dtype: awq kernels take auto, half, float16 activations only: set dtype to one of them, got "bfloat16"`},
		{"tensor parallel over time-sliced shares", stacktest.ServingAKS, func(c map[string]any) {
			stacktest.Pool(c, 0)["timeSlicing"] = 2
			stacktest.Model(c)["tensorParallel"] = 2
			stacktest.Model(c)["maxReplicas"] = 2
		}, `gpu-node-pools:models[0].tensorParallel: must be 1 on pool a100, where each GPU resource is a time-sliced share (2 per GPU): two shares may be the same physical GPU`},
		{"client namespace invalid", stacktest.ServingAKS, func(c map[string]any) {
			c["serving"] = map[string]any{"clientNamespaces": []any{"apps", "Team_B"}}
		}, `gpu-node-pools:serving.clientNamespaces[1]: must be a namespace name (a DNS label), got "Team_B"`},
		{"model size missing", stacktest.ServingAKS, func(c map[string]any) { delete(stacktest.Model(c), "parametersB") }, `gpu-node-pools:models[0].parametersB: required: billions of parameters (or weightsGB instead)`},
		{"model size twice", stacktest.ServingAKS, func(c map[string]any) { stacktest.Model(c)["weightsGB"] = 16 }, `gpu-node-pools:models[0].weightsGB: set parametersB or weightsGB, not both`},
		{"model source of the wrong store", stacktest.ServingAKS, func(c map[string]any) { stacktest.Model(c)["source"] = "s3://models/x" }, `gpu-node-pools:models[0].source: must be a az://<bucket>/<path> URL of the azureBlob store`},
		{"memory utilization too high", stacktest.ServingAKS, func(c map[string]any) { stacktest.Model(c)["gpuMemoryUtilization"] = 1.0 }, `gpu-node-pools:models[0].gpuMemoryUtilization: must be above 0 and at most 0.98`},
		{"replicas reversed", stacktest.ServingAKS, func(c map[string]any) { stacktest.Model(c)["minReplicas"] = 3; stacktest.Model(c)["maxReplicas"] = 2 }, `gpu-node-pools:models[0].maxReplicas: must be >= 1 and >= minReplicas (3), or left out: what the pool holds, got 2`},
		{"queue depth target negative", stacktest.ServingAKS, func(c map[string]any) { stacktest.Model(c)["queueDepthTarget"] = -1 }, `gpu-node-pools:models[0].queueDepthTarget: must be >= 1`},
		{"hostname invalid", stacktest.ServingAKS, func(c map[string]any) { stacktest.Model(c)["hostname"] = "Llama!" }, `gpu-node-pools:models[0].hostname: must be a DNS name`},
		{"model unknown key", stacktest.ServingAKS, func(c map[string]any) { stacktest.Model(c)["tensorParalel"] = 2 }, `gpu-node-pools:models[0].tensorParalel: unknown key (did you mean tensorParallel?)`},
		{"duplicate model", stacktest.ServingAKS, func(c map[string]any) {
			c["models"] = append(c["models"].([]any), stacktest.Model(stacktest.DeepCopy(c)))
		}, `gpu-node-pools:models[1].name: must be unique, models[0] has the same name`},
		// storage
		{"models without storage", stacktest.ServingAKS, func(c map[string]any) { delete(c, "storage") }, `gpu-node-pools:storage: required with models`},
		{"storage kind unknown", stacktest.ServingAKS, func(c map[string]any) { c["storage"].(map[string]any)["kind"] = "gcs" }, `gpu-node-pools:storage.kind: must be one of s3, azureBlob, got "gcs"`},
		{"s3 without keys", stacktest.ServingNatron, func(c map[string]any) { delete(c["storage"].(map[string]any), "secretKey") }, `gpu-node-pools:storage.secretKey: required for s3, as a secret: pulumi config set --secret --path gpu-node-pools:storage.secretKey <value>`},
		{"workload identity without the identity's name", stacktest.ServingAKS, func(c map[string]any) { delete(c["storage"].(map[string]any), "identityName") },
			`gpu-node-pools:storage.identityName: required with clientId: the managed identity's name, to federate it with the weights-download service account`},
		{"workload identity on bare metal", stacktest.ServingNatron, func(c map[string]any) {
			c["storage"] = map[string]any{"kind": "azureBlob", "account": "acmemodels", "clientId": "9a4d1c9e-3b6f-4d5a-8f2e-1c7b5e0d4a21", "identityName": "reader"}
			stacktest.Model(c)["source"] = "az://models/x"
		}, `gpu-node-pools:storage.clientId: workload identity needs a target that federates service accounts with a cloud identity (aks); on target natron use an accountKey`},
		{"velero workload identity on bare metal", stacktest.Natron, func(c map[string]any) {
			c["backup"] = map[string]any{"enabled": true, "install": true, "location": map[string]any{"provider": "azure", "bucket": "velero",
				"storageAccount": "acmebackups", "resourceGroup": "rg-acme-backup", "clientId": "9a4d1c9e-3b6f-4d5a-8f2e-1c7b5e0d4a21"}}
		}, `gpu-node-pools:backup.location.clientId: workload identity needs a target that federates service accounts with a cloud identity (aks); on target natron use keys`},
		{"aks login unknown", stacktest.AKS, func(c map[string]any) { c["aks"].(map[string]any)["login"] = "devicecode" },
			`gpu-node-pools:aks.login: must be one of azurecli, workloadidentity, spn, got "devicecode"`},
		{"azure blob without credentials", stacktest.ServingAKS, func(c map[string]any) { delete(c["storage"].(map[string]any), "clientId") }, `gpu-node-pools:storage.accountKey: azureBlob needs an accountKey`},
		// batch jobs
		{"batch at peak time", stacktest.ServingAKS, func(c map[string]any) { stacktest.Batch(c)["schedule"] = "0 14 * * *" }, `gpu-node-pools:batchJobs[0].schedule: must run within the off-peak hours 22:00-06:00 UTC so that batch work does not compete with serving, got "0 14 * * *"`},
		{"batch every hour", stacktest.ServingAKS, func(c map[string]any) { stacktest.Batch(c)["schedule"] = "0 * * * *" }, `gpu-node-pools:batchJobs[0].schedule: must name its hours explicitly`},
		{"batch schedule not cron", stacktest.ServingAKS, func(c map[string]any) { stacktest.Batch(c)["schedule"] = "nightly" }, `gpu-node-pools:batchJobs[0].schedule: must be a five-field cron schedule`},
		{"batch more GPUs than a node", stacktest.ServingAKS, func(c map[string]any) { stacktest.Batch(c)["gpus"] = 2 }, `gpu-node-pools:batchJobs[0].gpus: must be between 1 and the 1 GPUs of one a100 node, got 2`},
		{"batch on an unknown pool", stacktest.ServingAKS, func(c map[string]any) { stacktest.Batch(c)["pool"] = "cpu" }, `gpu-node-pools:batchJobs[0].pool: must name one of the pools`},
		{"batch without image", stacktest.ServingAKS, func(c map[string]any) { stacktest.Batch(c)["image"] = "" }, `gpu-node-pools:batchJobs[0].image: required`},
		{"batch as root in a restricted namespace", stacktest.ServingAKS, func(c map[string]any) { stacktest.Batch(c)["security"] = map[string]any{"runAsUser": 0} },
			`gpu-node-pools:batchJobs[0].security: needs Pod Security level baseline (runAsNonRoot != true, runAsUser=0: runAsNonRoot != true (pod or container "embed-nightly" must set securityContext.runAsNonRoot=true), runAsUser=0 (pod must not set runAsUser=0)), and the batch namespace "batch" enforces restricted: lower it with gpu-node-pools:podSecurity.batch {level: baseline, reason: ...}, or declare less, got "{\"runAsUser\":0}"`},
		{"batch with SYS_ADMIN in a baseline namespace", stacktest.ServingAKS, func(c map[string]any) {
			stacktest.Batch(c)["security"] = map[string]any{"capabilities": []any{"SYS_ADMIN"}}
			c["podSecurity"] = map[string]any{"batch": map[string]any{"level": "baseline", "reason": "legacy image needs root, ML-412"}}
		}, `gpu-node-pools:batchJobs[0].security: needs Pod Security level privileged (non-default capabilities: non-default capabilities (container "embed-nightly" must not include "SYS_ADMIN" in securityContext.capabilities.add)), and the batch namespace "batch" enforces baseline`},
		{"batch capability with prefix", stacktest.ServingAKS, func(c map[string]any) {
			stacktest.Batch(c)["security"] = map[string]any{"capabilities": []any{"cap_chown"}}
		}, `gpu-node-pools:batchJobs[0].security.capabilities[0]: must be a capability name such as NET_BIND_SERVICE`},
		{"batch negative user", stacktest.ServingAKS, func(c map[string]any) { stacktest.Batch(c)["security"] = map[string]any{"runAsUser": -1} },
			`gpu-node-pools:batchJobs[0].security.runAsUser: must be a user or group ID`},
		{"pod security level raised", stacktest.ServingAKS, func(c map[string]any) {
			c["podSecurity"] = map[string]any{"serving": map[string]any{"level": "restricted", "reason": "we want it strict anyway"}}
		}, `gpu-node-pools:podSecurity[serving].level: restricted is the default; only lowering is configurable (allowed values: baseline, privileged)`},
		{"pod security without reason", stacktest.ServingAKS, func(c map[string]any) {
			c["podSecurity"] = map[string]any{"batch": map[string]any{"level": "baseline"}}
		}, `gpu-node-pools:podSecurity[batch].reason: say why the batch namespace enforces less than restricted, in at least 15 characters`},
		{"pod security unknown namespace role", stacktest.ServingAKS, func(c map[string]any) {
			c["podSecurity"] = map[string]any{"gpu-platform": map[string]any{"level": "baseline", "reason": "the operator's namespace"}}
		}, `gpu-node-pools:podSecurity[gpu-platform]: must be one of serving, batch, keda, got "gpu-platform"`},
		{"network policy unknown", stacktest.ServingAKS, func(c map[string]any) { c["serving"].(map[string]any)["networkPolicy"] = "calico" },
			`gpu-node-pools:serving.networkPolicy: must be one of cilium, cidr, got "calico"`},
		{"cidr without ranges", stacktest.ServingAKS, func(c map[string]any) { delete(c["serving"].(map[string]any), "downloadCIDRs") },
			`gpu-node-pools:serving.downloadCIDRs: required with networkPolicy cidr: the address ranges of the weights store`},
		{"cidr not a range", stacktest.ServingAKS, func(c map[string]any) { c["serving"].(map[string]any)["downloadCIDRs"] = []any{"10.40.8.0"} },
			`gpu-node-pools:serving.downloadCIDRs[0]: must be a CIDR such as 10.20.0.0/24, got "10.40.8.0"`},
		{"ranges with cilium", stacktest.ServingNatron, func(c map[string]any) { c["serving"] = map[string]any{"downloadCIDRs": []any{"10.0.0.0/8"}} },
			`gpu-node-pools:serving.downloadCIDRs: read only with networkPolicy cidr`},
		{"batch namespace is the models'", stacktest.ServingAKS, func(c map[string]any) { c["serving"].(map[string]any)["batchNamespace"] = "models" },
			`gpu-node-pools:serving.batchNamespace: must be a DNS label other than the models' namespace, got "models"`},
		// policies
		{"policy action unknown", stacktest.AKS, func(c map[string]any) { c["policies"] = map[string]any{"action": "Deny"} }, `gpu-node-pools:policies.action: must be one of Enforce, Audit, got "Deny"`},
		{"one policy's action unknown", stacktest.AKS, func(c map[string]any) {
			c["policies"] = map[string]any{"gpuTaint": map[string]any{"action": "enforce"}}
		}, `gpu-node-pools:policies.gpuTaint.action: must be one of Enforce, Audit, got "enforce"`},
		{"registry without host", stacktest.AKS, func(c map[string]any) {
			c["policies"] = map[string]any{"allowedRegistries": map[string]any{"registries": []any{"nvcr.io", "vllm"}}}
		}, `gpu-node-pools:policies.allowedRegistries.registries[1]: must be a registry host with an optional path, such as nvcr.io or docker.io/vllm (images without a host are docker.io's), got "vllm"`},
		{"registry with scheme", stacktest.AKS, func(c map[string]any) {
			c["policies"] = map[string]any{"allowedRegistries": map[string]any{"registries": []any{"https://nvcr.io"}}}
		}, `gpu-node-pools:policies.allowedRegistries.registries[0]: must be a registry host`},
		{"registries lock out the platform", stacktest.AKS, func(c map[string]any) {
			c["policies"] = map[string]any{"allowedRegistries": map[string]any{"registries": []any{"registry.acme.io"}}}
		}, `gpu-node-pools:policies.allowedRegistries.registries: must allow nvcr.io/nvidia/k8s-device-plugin, which the device-plugin platform layer runs (allowed: registry.acme.io), got "nvcr.io/nvidia/k8s-device-plugin"`},
		{"registries lock out a batch job", stacktest.ServingAKS, func(c map[string]any) {
			stacktest.Batch(c)["image"] = "quay.io/acme/embed:1"
		}, `gpu-node-pools:policies.allowedRegistries.registries: must allow quay.io/acme/embed:1, which gpu-node-pools:batchJobs[0].image runs`},
		{"registries lock out the vLLM image", stacktest.ServingAKS, func(c map[string]any) {
			c["serving"] = map[string]any{"image": "ghcr.io/acme/vllm:1"}
		}, `gpu-node-pools:policies.allowedRegistries.registries: must allow ghcr.io/acme/vllm:1, which gpu-node-pools:serving.image runs`},
		{"exempt namespace invalid", stacktest.AKS, func(c map[string]any) {
			c["policies"] = map[string]any{"disallowPrivileged": map[string]any{"exemptNamespaces": []any{"Monitoring"}}}
		}, `gpu-node-pools:policies.disallowPrivileged.exemptNamespaces[0]: must be a namespace name (a DNS label), got "Monitoring"`},
		{"unknown policy key", stacktest.AKS, func(c map[string]any) {
			c["policies"] = map[string]any{"gpuTaints": map[string]any{}}
		}, `gpu-node-pools:policies.gpuTaints: unknown key (did you mean gpuTaint?)`},
		{"batch name too long", stacktest.ServingAKS, func(c map[string]any) { stacktest.Batch(c)["name"] = strings.Repeat("b", 53) }, `gpu-node-pools:batchJobs[0].name: must be a DNS label of at most 52 characters`},
		{"off-peak window empty", stacktest.ServingAKS, func(c map[string]any) { c["serving"] = map[string]any{"offPeakStartHour": 6, "offPeakEndHour": 6} }, `gpu-node-pools:serving.offPeakEndHour: must differ from offPeakStartHour (6), got 6`},
		{"off-peak hour invalid", stacktest.ServingAKS, func(c map[string]any) { c["serving"] = map[string]any{"offPeakStartHour": 24} }, `gpu-node-pools:serving.offPeakStartHour: must be an hour 0-23 (UTC), got 24`},
		{"serving unknown key", stacktest.ServingAKS, func(c map[string]any) { c["serving"] = map[string]any{"installKEDA": false} }, `gpu-node-pools:serving.installKEDA: unknown key (did you mean installKeda?)`},
		{"vllm chart version invalid", stacktest.ServingAKS, func(c map[string]any) {
			c["serving"] = map[string]any{"charts": map[string]any{"vllmStack": map[string]any{"version": "main"}}}
		}, `gpu-node-pools:serving.charts.vllmStack.version: must be a chart version such as 0.1.12, got "main"`},
		{"prometheus address invalid", stacktest.ServingAKS, func(c map[string]any) { c["serving"] = map[string]any{"prometheusAddress": "prometheus:9090"} }, `gpu-node-pools:serving.prometheusAddress: must be an http(s) URL`},
		// aks block
		{"aks resourceGroup missing", stacktest.AKS, func(c map[string]any) { delete(c["aks"].(map[string]any), "resourceGroup") }, `gpu-node-pools:aks.resourceGroup: must be an Azure resource group name`},
		{"aks clusterName invalid", stacktest.AKS, func(c map[string]any) { c["aks"].(map[string]any)["clusterName"] = "-bad" }, `gpu-node-pools:aks.clusterName: must be an AKS cluster name`},
		// natron block
		{"site unknown", stacktest.Natron, func(c map[string]any) { c["natron"].(map[string]any)["site"] = "mars" }, `gpu-node-pools:natron.site: must be one of natron-cloud, flex-stack, got "mars"`},
		{"cluster name invalid", stacktest.Natron, func(c map[string]any) { c["natron"].(map[string]any)["clusterName"] = "Acme" }, `gpu-node-pools:natron.clusterName: must be a DNS label`},
		{"namespace missing", stacktest.Natron, func(c map[string]any) { delete(c["natron"].(map[string]any), "namespace") }, `gpu-node-pools:natron.namespace: must be a DNS label`},
		{"kubernetes version invalid", stacktest.Natron, func(c map[string]any) { c["natron"].(map[string]any)["kubernetesVersion"] = "1.33" }, `gpu-node-pools:natron.kubernetesVersion: must be a Kubernetes version such as v1.33.4, got "1.33"`},
		{"image url missing", stacktest.Natron, func(c map[string]any) { delete(c["natron"].(map[string]any)["image"].(map[string]any), "url") }, `gpu-node-pools:natron.image.url: must be an http(s) URL`},
		{"image checksum missing", stacktest.Natron, func(c map[string]any) { delete(c["natron"].(map[string]any)["image"].(map[string]any), "checksum") }, `gpu-node-pools:natron.image.checksum: required`},
		{"image checksumType invalid", stacktest.Natron, func(c map[string]any) {
			c["natron"].(map[string]any)["image"].(map[string]any)["checksumType"] = "sha1"
		}, `gpu-node-pools:natron.image.checksumType: must be one of md5, sha256, sha512, got "sha1"`},
		{"image diskFormat invalid", stacktest.Natron, func(c map[string]any) { c["natron"].(map[string]any)["image"].(map[string]any)["diskFormat"] = "ext4" }, `gpu-node-pools:natron.image.diskFormat: must be one of raw, qcow2, vdi, vmdk, live-iso, got "ext4"`},
		{"kubeconfig missing", stacktest.Natron, func(c map[string]any) { delete(c["natron"].(map[string]any), "kubeconfig") }, `gpu-node-pools:natron.kubeconfig: required unless renderDir is set`},
		{"management kubeconfig missing", stacktest.Natron, func(c map[string]any) { delete(c["natron"].(map[string]any), "managementKubeconfig") }, `gpu-node-pools:natron.managementKubeconfig: required unless renderDir is set`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := stacktest.DeepCopy(tc.base())
			tc.mutate(c)
			raw := stacktest.Encode(t, c)

			_, err := plan.Load(raw, "test")
			var ce *plan.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Load: want *ConfigError, got %v", err)
			}
			if !strings.Contains(err.Error(), "\n  "+tc.want) {
				t.Fatalf("Load error does not contain %q:\n%s", tc.want, err)
			}

			m, err := pulumitest.Run(Program, config.Namespace, "test", stacktest.Namespaced(raw), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Program error does not contain %q: %v", tc.want, err)
			}
			if rs, calls := m.Resources(), m.Calls(); len(rs) != 0 || len(calls) != 0 {
				t.Fatalf("invalid config registered %d resources and made %d calls", len(rs), len(calls))
			}
		})
	}
}

// One run reports every problem, so a platform engineer fixes a stack file
// in one go.
func TestAllProblemsAtOnce(t *testing.T) {
	t.Parallel()
	c := stacktest.AKS()
	stacktest.Pool(c, 0)["maxNode"] = 3
	stacktest.Pool(c, 1)["minNodes"] = -2
	c["aks"].(map[string]any)["clusterName"] = ""
	c["protect"] = "maybe"
	_, err := plan.Load(stacktest.Encode(t, c), "test")
	var ce *plan.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("want *ConfigError, got %v", err)
	}
	want := []string{
		"gpu-node-pools:pools[0].maxNode",
		"gpu-node-pools:pools[1].minNodes",
		"gpu-node-pools:aks.clusterName",
		"gpu-node-pools:protect",
	}
	if len(ce.Problems) != len(want) {
		t.Fatalf("want %d problems, got %d:\n%s", len(want), len(ce.Problems), err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), "\n  "+w+": ") {
			t.Errorf("missing %s in:\n%s", w, err)
		}
	}
	if !strings.HasPrefix(err.Error(), "invalid stack config (4 problems):") {
		t.Errorf("summary line: %s", err)
	}
}

// Secrets never print, even in a config dumped by mistake.
func TestSecretsDoNotPrint(t *testing.T) {
	t.Parallel()
	cfg, _, errs := config.Decode(stacktest.Encode(t, stacktest.Natron()))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	block := cfg.Cluster.(*natron.Cluster)
	for _, s := range []string{
		strings.Join([]string{block.Kubeconfig.String(), block.ManagementKubeconfig.GoString()}, ""),
		fmt.Sprintf("%v %+v %#v %s", block, block, block, block),
	} {
		if strings.Contains(s, "kind: Config") {
			t.Fatalf("kubeconfig printed: %s", s)
		}
	}
}

// A key of the namespace that the program does not read reaches it only
// through the engine's full config (PULUMI_CONFIG): a typo such as
// gpu-node-pools:pool must still fail before anything is registered.
// Not parallel: it sets the environment.
func TestUnknownTopLevelKey(t *testing.T) {
	c := stacktest.AKS()
	c["pool"] = "x"
	raw := stacktest.Namespaced(stacktest.Encode(t, c))
	b, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(pulumi.EnvConfig, string(b))
	want := `gpu-node-pools:pool: unknown key (did you mean pools?); allowed keys: target, aks, natron, renderDir, protect, pools, platform, storage, serving, models, batchJobs, vectorDBs, policies, podSecurity, pricing, logging, backup, gitops, images, fleet, got "pool"`
	m, err := pulumitest.Run(Program, config.Namespace, "test", raw, nil)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Program error does not contain %q: %v", want, err)
	}
	if rs := m.Resources(); len(rs) != 0 {
		t.Fatalf("invalid config registered %d resources", len(rs))
	}
}

// One mistake gives one problem: what refers to a broken pool by name (a
// model, a batch job) is not reported too, whether the pool has a
// misspelled key, an unknown SKU or a bad value.
func TestOneMistakeOneProblem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func(c map[string]any)
		want   string
	}{
		{"misspelled pool key", func(c map[string]any) {
			p := stacktest.Pool(c, 0)
			p["maxNode"] = p["maxNodes"]
			delete(p, "maxNodes")
		}, `gpu-node-pools:pools[0].maxNode: unknown key (did you mean maxNodes?)`},
		{"unknown SKU", func(c map[string]any) { stacktest.Pool(c, 0)["sku"] = "h100-80gb-x16" }, `gpu-node-pools:pools[0].sku: unknown for target natron`},
		{"pool bounds", func(c map[string]any) { delete(stacktest.Pool(c, 0), "maxNodes") }, `gpu-node-pools:pools[0].maxNodes: must be between 1 and 1000, got 0`},
		{"pool of the wrong type", func(c map[string]any) { stacktest.Pool(c, 0)["minNodes"] = "none" }, `gpu-node-pools:pools[0].minNodes: must be a whole number, got a JSON string "none"`},
		{"misspelled model key", func(c map[string]any) { stacktest.Model(c)["tensorParalel"] = 2 }, `gpu-node-pools:models[0].tensorParalel: unknown key (did you mean tensorParallel?)`},
		{"bad tensor parallel", func(c map[string]any) { stacktest.Model(c)["tensorParallel"] = -2 }, `gpu-node-pools:models[0].tensorParallel: must be >= 1 (or left out: the smallest that fits), got -2`},
		{"platform of the wrong type", func(c map[string]any) { c["platform"] = map[string]any{"gpuStack": 1} }, `gpu-node-pools:platform.gpuStack: must be a string, got a JSON number 1`},
		{"unknown GPU stack under registries without NVIDIA's", func(c map[string]any) {
			c["platform"] = map[string]any{"gpuStack": "cuda"}
			c["policies"] = map[string]any{"allowedRegistries": map[string]any{"registries": []any{"docker.io/vllm", "docker.io/rclone", "docker.io/library/busybox", "docker.io/library/caddy", "registry.example"}}}
		}, `gpu-node-pools:platform.gpuStack: must be one of device-plugin, gpu-operator, got "cuda"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := stacktest.ServingNatron() // a model and a batch job on pools[0]
			tc.mutate(c)
			_, err := plan.Load(stacktest.Encode(t, c), "test")
			var ce *plan.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("want a ConfigError, got %v", err)
			}
			if len(ce.Problems) != 1 || !strings.HasPrefix(ce.Problems[0].String(), tc.want) {
				t.Errorf("want the one problem %s, got:\n%s", tc.want, err)
			}
		})
	}
}
