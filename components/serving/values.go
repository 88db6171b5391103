package serving

import (
	"cmp"
	"fmt"
	"math"

	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/images"
	"github.com/natron/gpu-node-pools/internal/monitoring"
	"github.com/natron/gpu-node-pools/internal/plain"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
)

// Engine is how one model is served, beyond its fit facts: decided once,
// when the stack's plan is made, and read by every object of the model.
type Engine struct {
	// Model holds the fit facts, vLLM's --max-model-len among them: one
	// field, read by the fit check and the engine's arguments alike.
	fit.Model
	// Source is where the weights are downloaded from (s3:// or az://).
	Source string
	// Checksums pin the weights (nil: not verified); TrustRemoteCode lets
	// vLLM run the Python files the directory holds.
	Checksums       *Checksums
	TrustRemoteCode bool
	// Hostname is the public endpoint's name ("" for none).
	Hostname string
	// Pool is the pool the model runs on.
	Pool        gpupool.Facts
	MinReplicas int
	// QueueDepthTarget is the waiting requests per replica before KEDA
	// scales out.
	QueueDepthTarget int
	// Image is the vLLM image, repository:tag.
	Image string
	// APIKeySecret names the Secret holding the model's API key, under
	// APIKeyField: its own key's field, or the stack's shared one.
	APIKeySecret, APIKeyField string
	// ProxyImage is the API-key proxy's image (Caddy), DownloadImage the
	// weight download's, WaitImage its wait container's.
	ProxyImage, DownloadImage, WaitImage string
	// WeightsClaim is the ReadWriteMany claim holding the weights, filled
	// once and mounted read-only at /models by every replica.
	WeightsClaim string
	// BandwidthMBps is the read bandwidth of the weights cache.
	BandwidthMBps float64
	// PrometheusAddress is where KEDA reads the queue depth.
	PrometheusAddress string
	// ServiceMonitorLabels match the cluster's Prometheus.
	ServiceMonitorLabels map[string]string
	// RuntimeClass is "nvidia" with the GPU operator, "" where the node's
	// default runtime already exposes GPUs (AKS).
	RuntimeClass  string
	PriorityClass string
}

// APIKeyField is the key of the API key in its Secret.
const APIKeyField = "api-key"

// WeightsPath is where replicas find the weights.
const WeightsPath = "/models"

type probe struct {
	InitialDelaySeconds int `json:"initialDelaySeconds"`
	PeriodSeconds       int `json:"periodSeconds"`
	FailureThreshold    int `json:"failureThreshold"`
	HTTPGet             struct {
		Path string `json:"path"`
		Port int    `json:"port"`
	} `json:"httpGet"`
}

func healthProbe(delay, period, failures int) probe {
	p := probe{InitialDelaySeconds: delay, PeriodSeconds: period, FailureThreshold: failures}
	// through the proxy, which passes the health path without a key
	p.HTTPGet.Path, p.HTTPGet.Port = HealthPath, ProxyPort
	return p
}

// VLLMValues are the vllm-stack chart's values for one model (one release
// per model: the chart's probes are per release, and each model's startup
// budget follows from its own weights). The chart's router is off: each
// model is reached through its engine Service, or through the HTTP add-on's
// interceptor when it scales from zero.
func VLLMValues(e Engine) map[string]any {
	budget := fit.StartupBudgetSeconds(e.Weights(), e.BandwidthMBps)
	tp := e.TensorParallel
	hostMemGi := int(math.Max(16, math.Ceil(1.2*e.Weights()))) // weights pass through host memory while loading
	tolerations, selector := e.Pool.TolerationValues(), poolMatchExpressions(e.Pool)
	vllm := map[string]any{
		"tensorParallelSize":   tp,
		"maxModelLen":          e.MaxModelLen,
		"gpuMemoryUtilization": e.MemoryUtilization(),
		"dtype":                e.Dtype,
		// the chart writes --no-enable-prefix-caching unless this is set,
		// which would switch off a vLLM default
		"enablePrefixCaching": true,
	}
	vllm["extraArgs"] = extraArgs(e)
	scratch, scratchMounts := engineScratch()
	model := map[string]any{
		"name":              e.Name,
		"repository":        imageRepo(e.Image),
		"tag":               imageTag(e.Image),
		"modelURL":          WeightsDir(e),
		"replicaCount":      max(e.MinReplicas, 1), // removed: LeaveReplicasToKEDA
		"requestCPU":        4 * tp,
		"limitCPU":          8 * tp,
		"requestMemory":     fmt.Sprintf("%dGi", hostMemGi),
		"limitMemory":       fmt.Sprintf("%dGi", hostMemGi*3/2),
		"requestGPU":        tp,
		"requestGPUType":    e.Pool.GPUResource,
		"runtimeClassName":  e.RuntimeClass,
		"priorityClassName": e.PriorityClass,
		"enableLoRA":        false,
		"nodeSelectorTerms": []any{map[string]any{"matchExpressions": selector}},
		"extraVolumes": append([]any{map[string]any{
			"name": "weights", "persistentVolumeClaim": map[string]any{"claimName": e.WeightsClaim, "readOnly": true},
		}}, scratch...),
		"extraVolumeMounts":  append([]any{map[string]any{"name": "weights", "mountPath": WeightsPath, "readOnly": true}}, scratchMounts...),
		"env":                engineEnv(),
		"serviceAccountName": ModelServerAccount,
		"initContainer":      WaitForWeights(e),
		"vllmConfig":         vllm,
		// the Deployment's annotations: how long `pulumi up` waits for it
		"annotations":    AwaitAnnotations(e),
		"podAnnotations": enginePodAnnotations(e),
		"pdb":            map[string]any{"enabled": true, "maxUnavailable": 1},
		// scaling is a ScaledObject of our own (ScaledObject)
		"keda": map[string]any{"enabled": false},
	}
	return helm.Values(map[string]any{
		"servingEngineSpec": map[string]any{
			"enableEngine": true,
			// restricted (podsecurity): the chart applies the container
			// context to the init container too
			"securityContext":          podsecurity.PodContext(),
			"containerSecurityContext": podsecurity.ContainerContext(true),
			"vllmApiKey":               map[string]any{"secretName": e.APIKeySecret, "secretKey": e.APIKeyField},
			// vLLM's port, on loopback (behindProxy): the proxy listens on
			// the pod's address
			"containerPort":  EnginePort,
			"tolerations":    tolerations,
			"startupProbe":   healthProbe(15, 10, int(math.Ceil(float64(budget)/10))),
			"readinessProbe": healthProbe(15, 10, 3),
			"livenessProbe":  healthProbe(15, 15, 4),
			// the program writes the ServiceMonitor (EngineServiceMonitor)
			"serviceMonitor": map[string]any{"enabled": false},
			// The chart's sample labels (environment: test, release: test)
			// would land in the engine's immutable selector: nil removes
			// them (helm.Release.Nulls).
			"labels":    map[string]any{ModelLabel: e.Name, "environment": nil, "release": nil},
			"modelSpec": []any{model},
			// One replica at a time, no surge: a pool sized to its replicas
			// has no spare GPU for the chart's default (maxSurge 100%), and
			// its rollout would never complete.
			"strategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": 0, "maxUnavailable": 1}},
		},
		"routerSpec": map[string]any{"enableRouter": false},
	})
}

// SafeToEvict is the cluster autoscaler's annotation: "false" keeps it
// from removing the node a pod runs on to consolidate (cluster-autoscaler
// simulator/drainability/rules/notsafetoevict/rule.go, 1.34).
const SafeToEvict = "cluster-autoscaler.kubernetes.io/safe-to-evict"

// enginePodAnnotations keep the autoscaler from moving a model's only
// replica to pack nodes: the move is an outage of a cold start. Models
// with more replicas are left to it, one at a time (the engine's
// PodDisruptionBudget, maxUnavailable 1, which also lets the host's node
// upgrades drain a one-replica model rather than stall on it).
func enginePodAnnotations(e Engine) map[string]any {
	if e.MinReplicas > 1 {
		return nil
	}
	return map[string]any{SafeToEvict: "false"}
}

// MemoryUtilization is vLLM's --gpu-memory-utilization for one replica: a
// fraction of the whole GPU's memory, which vLLM requires free at start
// (vllm/v1/worker/gpu_worker.py, Worker.init_device, at v0.11.0: free
// memory below total × utilization raises). Time-sliced replicas share a
// GPU, so each asks for its share.
func (e Engine) MemoryUtilization() float64 {
	return fit.ShareUtilization(e.GPUMemoryUtilization, e.Pool)
}

func imageRepo(image string) string {
	repo, _, _ := images.Split(image)
	return repo
}

// imageTag is what the chart writes after "<repository>:": the tag, and
// the digest after it when there is one (repo:tag@sha256:...).
func imageTag(image string) string {
	_, tag, digest := images.Split(image)
	tag = cmp.Or(tag, "latest")
	if digest != "" {
		tag += "@" + digest
	}
	return tag
}

// DeploymentName is the engine Deployment the chart creates for a model.
func DeploymentName(model string) string { return Release(model) + "-" + model + "-deployment-vllm" }

// EngineServiceMonitor scrapes a model's engine Service for vLLM's
// metrics. It selects the Service by the model label the program gives it
// (servingEngineSpec.labels), not by app.kubernetes.io/instance, which
// Argo CD's label tracking rewrites on the Service.
func EngineServiceMonitor(ns string, e Engine) map[string]any {
	return monitoring.ServiceMonitor("model-"+e.Name, ns, e.ServiceMonitorLabels,
		map[string]string{ModelLabel: e.Name, "app.kubernetes.io/component": "serving-engine"},
		"metrics", "15s")
}

// ModelLabel names the model on each of its engine's objects.
const ModelLabel = "gpu-node-pools/model"

// poolMatchExpressions pin a pod to a pool (node affinity), in the form the
// chart's nodeSelectorTerms and a pod's required node affinity both take.
func poolMatchExpressions(p gpupool.Facts) []any {
	out := []any{}
	for _, k := range plain.SortedKeys(p.NodeSelector) {
		out = append(out, map[string]any{"key": k, "operator": "In", "values": []any{p.NodeSelector[k]}})
	}
	return out
}

// extraArgs are the engine flags the chart has no key for: the name
// clients ask for the model by (its config name, not the path of its
// weights), a quantization vLLM applies as it loads (one a checkpoint
// carries, vLLM reads from it and picks the kernel for: fit.Quantization's
// Online) and an fp8 KV cache.
func extraArgs(e Engine) []any {
	extra := []any{"--served-model-name", e.Name}
	if fit.Quantizations[e.Quantization].Online {
		extra = append(extra, "--quantization", e.Quantization)
	}
	if e.KVCacheDtype == "fp8" {
		extra = append(extra, "--kv-cache-dtype", "fp8")
	}
	if e.TrustRemoteCode {
		extra = append(extra, "--trust-remote-code")
	}
	return extra
}
