package serving

import (
	"context"
	"fmt"
	"maps"
	"math"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/kube"
)

// The KEDA HTTP add-on (chart keda-add-ons-http, installed with KEDA in its
// namespace): its interceptor takes a scaled-to-zero model's requests and
// holds them until an engine is ready; its scaler tells KEDA about them.
var HTTPAddOnChart = helm.Chart{Name: "keda-add-ons-http", Version: "0.15.0", Repo: "https://kedacore.github.io/charts",
	Images: []string{"ghcr.io/kedacore/http-add-on-operator", "ghcr.io/kedacore/http-add-on-interceptor", "ghcr.io/kedacore/http-add-on-scaler"}}

// Where the add-on answers: its chart names the Services <chart>-<service>
// (values interceptor.proxy.service, scaler.service and their ports).
const (
	KEDANamespace   = "keda"
	InterceptorHost = "keda-add-ons-http-interceptor-proxy." + KEDANamespace + ".svc.cluster.local"
	InterceptorPort = 8080
	ScalerAddress   = "keda-add-ons-http-external-scaler." + KEDANamespace + ":9090"
)

// WakeConcurrency is the interceptor's concurrency target per replica. The
// interceptor counts requests in flight, which a vLLM replica batches by
// the hundred, so at this target its trigger asks for more replicas only
// past batch saturation: it wakes the engine, queue depth scales it out.
const WakeConcurrency = 256

// ScalesFromZero is whether the model may have no replica.
func (e Engine) ScalesFromZero() bool { return e.MinReplicas == 0 }

// RouteName names a model's InterceptorRoute and its wake Service.
func RouteName(model string) string { return "model-" + model }

// ScaledObject scales a model's engine, the only one on it (KEDA refuses
// a second on one Deployment). Scale-out follows the inference queue depth
// (vLLM's waiting requests per replica). That series comes from the
// engine pods, so at zero replicas it is gone and KEDA reads nothing as 0:
// a model that scales from zero is woken by the HTTP add-on's
// external-push trigger, whose scaler reports the requests the interceptor
// is holding for it.
func ScaledObject(ns string, e Engine) map[string]any {
	triggers := []any{map[string]any{
		"type": "prometheus",
		"name": "queue-depth",
		"metadata": map[string]any{
			"serverAddress": e.PrometheusAddress,
			"query":         QueueDepthQuery(e.Name),
			"threshold":     fmt.Sprint(e.QueueDepthTarget),
		},
	}}
	if e.ScalesFromZero() {
		triggers = append(triggers, map[string]any{
			"type": "external-push",
			"name": "wake",
			"metadata": map[string]any{
				"scalerAddress":    ScalerAddress,
				"interceptorRoute": RouteName(e.Name),
			},
		})
	}
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
			"triggers":       triggers,
		},
	}
}

// LeaveReplicasToKEDA is a transform of a model's chart: the chart writes
// spec.replicas on the engine Deployment (its own ScaledObject is off: the
// provider cannot place a kind whose CRD it does not know, as when
// rendering), and every later chart change would reset the replicas KEDA
// chose. Without the field, the API server starts the Deployment at one
// replica and the field belongs to KEDA's HPA.
func LeaveReplicasToKEDA(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
	if a.Type != "kubernetes:apps/v1:Deployment" {
		return nil
	}
	props, changed := WithoutReplicas(a.Props)
	if !changed {
		return nil
	}
	return &pulumi.ResourceTransformResult{Props: props, Opts: a.Opts}
}

// ProgressDeadline is a transform of a model's chart: the engine
// Deployment's progressDeadlineSeconds, which the chart fixes at 1200
// (vllm-stack 0.1.12 templates/deployment-vllm-multi.yaml), becomes the
// model's cold start. A new replica waits for a GPU node, the image and
// the weights far longer than 20 minutes, and a Deployment without
// progress for its deadline is marked ProgressDeadlineExceeded, which
// Argo CD judges Degraded (gitops-engine pkg/health/health_deployment.go)
// and Flux's wait a failure: the sync stops there.
func ProgressDeadline(e Engine) pulumi.ResourceTransform {
	return func(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
		if a.Type != "kubernetes:apps/v1:Deployment" {
			return nil
		}
		spec, ok := a.Props["spec"].(pulumi.Map)
		if !ok {
			return nil
		}
		spec = maps.Clone(spec)
		spec["progressDeadlineSeconds"] = pulumi.Int(ColdStartSeconds(e))
		props := maps.Clone(a.Props)
		props["spec"] = spec
		return &pulumi.ResourceTransformResult{Props: props, Opts: a.Opts}
	}
}

// WithoutReplicas is a Deployment's inputs without spec.replicas, and
// whether there was one.
func WithoutReplicas(props pulumi.Map) (pulumi.Map, bool) {
	spec, ok := props["spec"].(pulumi.Map)
	if !ok {
		return props, false
	}
	if _, set := spec["replicas"]; !set {
		return props, false
	}
	spec = maps.Clone(spec)
	delete(spec, "replicas")
	out := maps.Clone(props)
	out["spec"] = spec
	return out, true
}

// QueueDepthQuery is the scale-out query: requests waiting across a
// model's replicas (vLLM labels its metrics with the served model name,
// --served-model-name: the model's config name).
func QueueDepthQuery(model string) string {
	return fmt.Sprintf(`sum(vllm:num_requests_waiting{model_name=%q})`, model)
}

// WakeHosts are the Host headers the interceptor routes to a model: its
// public name and the in-cluster names of its wake Service.
func WakeHosts(ns string, e Engine) []any {
	svc := RouteName(e.Name)
	hosts := []any{svc, svc + "." + ns, svc + "." + ns + ".svc", svc + "." + ns + ".svc.cluster.local"}
	if e.Hostname != "" {
		hosts = append([]any{e.Hostname}, hosts...)
	}
	return hosts
}

// InterceptorRoute routes a scaled-to-zero model's requests through the
// interceptor to its engine Service, holding each until an engine is ready
// for as long as a cold start may take, and then waiting for the reply as
// long as the ingress does (the interceptor's own default is 300 s).
func InterceptorRoute(ns string, e Engine) map[string]any {
	return map[string]any{
		"apiVersion": "http.keda.sh/v1beta1",
		"kind":       "InterceptorRoute",
		"metadata":   map[string]any{"name": RouteName(e.Name), "namespace": ns, "labels": map[string]any{"gpu-node-pools/model": e.Name}},
		"spec": map[string]any{
			"target":        map[string]any{"service": ServiceName(e.Name), "port": 80},
			"rules":         []any{map[string]any{"hosts": WakeHosts(ns, e)}},
			"scalingMetric": map[string]any{"concurrency": map[string]any{"targetValue": WakeConcurrency}},
			"timeouts": map[string]any{"readiness": fmt.Sprintf("%ds", ColdStartSeconds(e)),
				"responseHeader": fmt.Sprintf("%ds", ResponseSeconds)},
		},
	}
}

// NodeAndImageSeconds bounds what comes before the weights: a GPU node
// scaling up from zero (bare-metal provisioning is the slow case) and the
// vLLM image pull.
const NodeAndImageSeconds = 1800

// DownloadSeconds is how long filling the weights cache takes at the
// configured bandwidth.
func DownloadSeconds(weightsGB, bandwidthMBps float64) int {
	return int(math.Ceil(weightsGB * 1000 / bandwidthMBps))
}

// ColdStartSeconds is how long a model's first replica may take to serve:
// a node and the image, the first weights download, then the replica's
// startup budget (the startup probe's).
func ColdStartSeconds(e Engine) int {
	return NodeAndImageSeconds + DownloadSeconds(e.Weights(), e.BandwidthMBps) + fit.StartupBudgetSeconds(e.Weights(), e.BandwidthMBps)
}

// AwaitAnnotations tell Pulumi how long to wait for a model's engine
// Deployment (its default gives up after 10 minutes). An engine that
// scales from zero is not awaited: KEDA takes it to zero replicas, and
// waiting for a replica would start a GPU node only to satisfy the wait.
func AwaitAnnotations(e Engine) map[string]any {
	if e.ScalesFromZero() {
		return map[string]any{kube.SkipAwaitAnnotation: "true"}
	}
	return map[string]any{"pulumi.com/timeoutSeconds": fmt.Sprint(ColdStartSeconds(e))}
}

// HTTPAddOnValues make the add-on's pods meet Pod Security "restricted" in
// KEDA's namespace: the chart's defaults (0.15.0 values.yaml) drop every
// capability but set neither runAsNonRoot nor a seccomp profile. Its
// images run as a numeric non-root user, which runAsNonRoot requires.
func HTTPAddOnValues() map[string]any {
	return map[string]any{"podSecurityContext": map[string]any{
		"fsGroup": 1000, "supplementalGroups": []any{1000},
		"runAsNonRoot":   true,
		"seccompProfile": map[string]any{"type": "RuntimeDefault"},
	}}
}
