package serving

import (
	"fmt"
	"math"
	"strings"

	"github.com/natron/gpu-node-pools/components/gpupool"
	"github.com/natron/gpu-node-pools/components/helm"
	"github.com/natron/gpu-node-pools/components/kube"
	"github.com/natron/gpu-node-pools/components/plain"
)

// Engine is how one model is served, beyond its fit facts: decided once,
// when the stack's plan is made, and read by every object of the model.
type Engine struct {
	Model
	// Source is where the weights are downloaded from (s3:// or az://).
	Source string
	// Hostname is the public endpoint's name ("" for none).
	Hostname string
	// Pool is the pool the model runs on.
	Pool gpupool.Pool
	// MaxModelLen is vLLM's --max-model-len.
	MaxModelLen int
	MinReplicas int
	// QueueDepthTarget is the waiting requests per replica before KEDA
	// scales out.
	QueueDepthTarget int
	// Image is the vLLM image, repository:tag.
	Image string
	// APIKeySecret names the Secret holding the API key under "api-key".
	APIKeySecret string
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
	p.HTTPGet.Path, p.HTTPGet.Port = "/health", 8000
	return p
}

// VLLMValues are the vllm-stack chart's values for one model (one release
// per model: the chart's probes are per release, and each model's startup
// budget follows from its own weights). The chart's router is off: each
// model is reached through its engine Service.
func VLLMValues(e Engine) map[string]any {
	budget := StartupBudgetSeconds(e.Weights(), e.BandwidthMBps)
	tp := e.TensorParallel
	hostMemGi := int(math.Max(16, math.Ceil(1.2*e.Weights()))) // weights pass through host memory while loading
	tolerations, selector := poolTolerations(e.Pool), poolMatchExpressions(e.Pool)
	model := map[string]any{
		"name":              e.Name,
		"repository":        imageRepo(e.Image),
		"tag":               imageTag(e.Image),
		"modelURL":          WeightsPath + "/" + e.Name,
		"replicaCount":      max(e.MinReplicas, 1),
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
		"extraVolumes": []any{map[string]any{
			"name": "weights", "persistentVolumeClaim": map[string]any{"claimName": e.WeightsClaim, "readOnly": true},
		}},
		"extraVolumeMounts": []any{map[string]any{"name": "weights", "mountPath": WeightsPath, "readOnly": true}},
		"initContainer":     WaitForWeights(e.Name),
		"vllmConfig": map[string]any{
			"tensorParallelSize":   tp,
			"maxModelLen":          e.MaxModelLen,
			"gpuMemoryUtilization": e.GPUMemoryUtilization,
			"dtype":                e.Dtype,
		},
		// scaling is a ScaledObject of our own (ScaledObject below): the
		// chart's would need KEDA's CRDs known even when only rendering
		"keda": map[string]any{"enabled": false},
	}
	return helm.Values(map[string]any{
		"servingEngineSpec": map[string]any{
			"enableEngine":   true,
			"vllmApiKey":     map[string]any{"secretName": e.APIKeySecret, "secretKey": APIKeyField},
			"tolerations":    tolerations,
			"startupProbe":   healthProbe(15, 10, int(math.Ceil(float64(budget)/10))),
			"readinessProbe": healthProbe(15, 10, 3),
			"livenessProbe":  healthProbe(15, 15, 4),
			// the program writes the ServiceMonitor (EngineServiceMonitor)
			"serviceMonitor": map[string]any{"enabled": false},
			// replaces the chart's sample labels (environment: test, ...)
			"labels":    map[string]any{"gpu-node-pools/model": e.Name},
			"modelSpec": []any{model},
		},
		"routerSpec": map[string]any{"enableRouter": false},
	})
}

func imageRepo(image string) string {
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[:i]
	}
	return image
}

func imageTag(image string) string {
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[i+1:]
	}
	return "latest"
}

// DeploymentName is the engine Deployment the chart creates for a model.
func DeploymentName(model string) string { return Release(model) + "-" + model + "-deployment-vllm" }

// ScaledObject scales a model's engine on its inference queue depth (vLLM's
// waiting requests per replica), not on CPU, within the configured and
// fit-checked replica bounds.
func ScaledObject(ns string, e Engine) map[string]any {
	return map[string]any{
		"apiVersion": "keda.sh/v1alpha1",
		"kind":       "ScaledObject",
		"metadata":   map[string]any{"name": "model-" + e.Name, "namespace": ns},
		"spec": map[string]any{
			"scaleTargetRef":  map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": DeploymentName(e.Name)},
			"minReplicaCount": e.MinReplicas,
			"maxReplicaCount": e.MaxReplicas,
			"pollingInterval": 15,
			// weights take minutes to load: do not scale in on a lull
			"cooldownPeriod": 600,
			"triggers": []any{map[string]any{
				"type": "prometheus",
				"metadata": map[string]any{
					"serverAddress": e.PrometheusAddress,
					"query":         fmt.Sprintf(`sum(vllm:num_requests_waiting{model_name=%q})`, WeightsPath+"/"+e.Name),
					"threshold":     fmt.Sprint(e.QueueDepthTarget),
				},
			}},
		},
	}
}

// EngineServiceMonitor scrapes a model's engine Service for vLLM's metrics.
func EngineServiceMonitor(ns string, e Engine) map[string]any {
	return kube.ServiceMonitor("model-"+e.Name, ns, e.ServiceMonitorLabels,
		map[string]string{"app.kubernetes.io/instance": Release(e.Name), "app.kubernetes.io/component": "serving-engine"},
		"service-port", "15s")
}

// poolTolerations are a pool's tolerations as plain pod-spec data.
func poolTolerations(p gpupool.Pool) []any {
	out := make([]any, len(p.Tolerations))
	for i, t := range p.Tolerations {
		out[i] = map[string]any{"key": t.Key, "operator": t.Operator, "value": t.Value, "effect": t.Effect}
	}
	return out
}

// poolMatchExpressions pin a pod to a pool (node affinity), in the form the
// chart's nodeSelectorTerms and a pod's required node affinity both take.
func poolMatchExpressions(p gpupool.Pool) []any {
	out := []any{}
	for _, k := range plain.SortedKeys(p.NodeSelector) {
		out = append(out, map[string]any{"key": k, "operator": "In", "values": []any{p.NodeSelector[k]}})
	}
	return out
}
