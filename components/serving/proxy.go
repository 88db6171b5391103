package serving

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/natron/gpu-node-pools/internal/apiproxy"
	"github.com/natron/gpu-node-pools/internal/helm"
)

// Ports of an engine's pod. The API-key proxy is the only listener on
// the pod's address: clients (the Service, the interceptor) reach it on
// ProxyPort, Prometheus on MetricsPort; vLLM listens on loopback only,
// where nothing outside the pod reaches it, so no path vLLM's --api-key
// leaves open (/invocations, /tokenize, /pooling, /pause, ...: vLLM
// docs/usage/security.md) is reachable from outside the pod.
const (
	ProxyPort   = 8000
	EnginePort  = 8001
	MetricsPort = 8002
	// EngineHost is where vLLM listens: loopback.
	EngineHost = "127.0.0.1"
	// HealthPath is vLLM's health endpoint, which the probes read through
	// the proxy without a key.
	HealthPath = "/health"
	// ProxyContainer names the proxy in the pod.
	ProxyContainer = "api-key-proxy"
	// ProxyKeyEnv carries the model's key into the proxy.
	ProxyKeyEnv = "API_KEY"
)

// EngineProxy is the proxy in front of a model's engine: every OpenAI
// path the product offers with the model's key (passed on: vLLM checks
// it again), the health path without, vLLM's metrics on their own port.
func EngineProxy() apiproxy.Sidecar {
	return apiproxy.Sidecar{
		Port: ProxyPort, Upstream: fmt.Sprintf("%s:%d", EngineHost, EnginePort), KeyEnv: ProxyKeyEnv,
		Health:            apiproxy.Health{Path: HealthPath, Methods: []string{"GET"}},
		KeepAuthorization: true,
		MetricsPort:       MetricsPort, MetricsPath: "/metrics",
	}
}

// ProxyConfigMap names the ConfigMap holding a model's proxy Caddyfile.
func ProxyConfigMap(model string) string { return Release(model) + "-proxy" }

// EngineRelease is a model's vllm-stack release: its values, and the
// patches that put the proxy in front of the engine.
func EngineRelease(src helm.Source, e Engine, chart helm.Chart) helm.Release {
	rel := src.Release(Release(e.Name), chart, VLLMValues(e))
	rel.Patches = []helm.Patch{func(o map[string]any) { behindProxy(o, e) }}
	return rel
}

// behindProxy changes what the chart renders for a model where its values
// cannot: the Deployment gets the proxy as a native sidecar (the chart
// has no slot for a second container) and vLLM listens on loopback (the
// chart writes --host 0.0.0.0); the Service sends clients to the proxy
// and Prometheus to the metrics port (the chart's target is vLLM's port
// by name), and nothing to the ports vLLM's disaggregated prefill would
// use (zmq, ucx), which nothing here listens on.
func behindProxy(o map[string]any, e Engine) {
	switch o["kind"] {
	case "Deployment":
		pod := dig(o, "spec", "template", "spec")
		if pod == nil {
			// an engine the proxy would not guard: stop, rather than run it
			panic(fmt.Sprintf("model %s: the engine Deployment's pod template is not known; its API-key proxy cannot be added", e.Name))
		}
		proxy := apiproxy.Container(ProxyContainer, e.ProxyImage, TmpPath,
			[]apiproxy.Port{{Name: "api", Port: ProxyPort}, {Name: "metrics", Port: MetricsPort}},
			[]apiproxy.Key{{Env: ProxyKeyEnv, Secret: e.APIKeySecret, Field: e.APIKeyField}}, true)
		pod["initContainers"] = append(anyList(pod["initContainers"]), proxy)
		pod["volumes"] = append(anyList(pod["volumes"]), apiproxy.Volumes(ProxyConfigMap(e.Name))...)
		onLoopback := false
		for _, c := range anyList(pod["containers"]) {
			if c, _ := c.(map[string]any); c != nil && c["name"] == "vllm" {
				cmd, ok := c["command"].([]any)
				if !ok {
					break
				}
				c["command"], onLoopback = withFlag(cmd, "--host", EngineHost), true
			}
		}
		if !onLoopback {
			panic(fmt.Sprintf("model %s: the engine's command is not known; vLLM cannot be kept to loopback", e.Name))
		}
	case "Service":
		spec := dig(o, "spec")
		if spec == nil {
			panic(fmt.Sprintf("model %s: the engine Service's spec is not known; it cannot be sent to the proxy", e.Name))
		}
		spec["ports"] = []any{
			map[string]any{"name": "service-port", "port": 80, "targetPort": ProxyPort, "protocol": "TCP"},
			map[string]any{"name": "metrics", "port": MetricsPort, "targetPort": MetricsPort, "protocol": "TCP"},
		}
	}
}

// withFlag is a command with flag's value set to v (added when absent).
func withFlag(cmd []any, flag, v string) []any {
	out := slices.Clone(cmd)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == flag {
			out[i+1] = v
			return out
		}
	}
	return append(out, flag, v)
}

func dig(o map[string]any, path ...string) map[string]any {
	for _, k := range path {
		next, ok := o[k].(map[string]any)
		if !ok {
			return nil
		}
		o = next
	}
	return o
}

func anyList(v any) []any {
	l, _ := v.([]any)
	return l
}

// Gateway is the API-key gateway in front of the HTTP add-on's
// interceptor: a scaled-to-zero model's wake Service and public endpoint
// lead to it, and it forwards only requests with the model's key, so no
// anonymous caller wakes a model and keeps its GPU nodes up.
const (
	GatewayName       = "model-gateway"
	GatewayComponent  = "model-gateway"
	GatewayHealthPort = 8081
	GatewayReplicas   = 2
)

// GatewayProxy is the gateway's configuration: each scaled-to-zero
// model's names, with its key.
func GatewayProxy(ns string, engines []Engine) apiproxy.Gateway {
	g := apiproxy.Gateway{Port: InterceptorPort, HealthPort: GatewayHealthPort, HealthPath: "/healthz",
		Upstream: InterceptorHost + ":" + strconv.Itoa(InterceptorPort)}
	for _, e := range engines {
		if !e.ScalesFromZero() {
			continue
		}
		var hosts []string
		for _, h := range WakeHosts(ns, e) {
			hosts = append(hosts, h.(string))
		}
		g.Routes = append(g.Routes, apiproxy.Route{Hosts: hosts, KeyEnv: apiproxy.KeyEnv(e.Name)})
	}
	return g
}

// GatewayPods selects the gateway's pods.
var GatewayPods = map[string]string{ComponentLabel: GatewayComponent}
