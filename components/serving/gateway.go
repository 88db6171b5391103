package serving

import (
	"github.com/natron/gpu-node-pools/internal/apiproxy"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
)

// wakingEngines are the engines that scale from zero.
func wakingEngines(engines []Engine) []Engine {
	var out []Engine
	for _, e := range engines {
		if e.ScalesFromZero() {
			out = append(out, e)
		}
	}
	return out
}

// GatewayDeployment runs the gateway on CPU nodes, two replicas (a
// scaled-to-zero model is unreachable while none runs), restricted, with
// no API token, each model's key from its Secret field.
func GatewayDeployment(ns string, engines []Engine, image string) map[string]any {
	var keys []apiproxy.Key
	for _, e := range wakingEngines(engines) {
		keys = append(keys, apiproxy.Key{Env: apiproxy.KeyEnv(e.Name), Secret: e.APIKeySecret, Field: e.APIKeyField})
	}
	c := apiproxy.Container("gateway", image, TmpPath,
		[]apiproxy.Port{{Name: "http", Port: InterceptorPort}, {Name: "health", Port: GatewayHealthPort}}, keys, false)
	probe := map[string]any{"httpGet": map[string]any{"path": "/healthz", "port": GatewayHealthPort}, "periodSeconds": 10}
	c["readinessProbe"], c["livenessProbe"] = probe, probe
	return map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": GatewayName, "namespace": ns, "labels": kube.AnyMap(GatewayPods)},
		"spec": map[string]any{
			"replicas": GatewayReplicas,
			"selector": map[string]any{"matchLabels": kube.AnyMap(GatewayPods)},
			"template": map[string]any{
				"metadata": map[string]any{"labels": kube.AnyMap(GatewayPods)},
				"spec": map[string]any{
					"serviceAccountName":           ModelServerAccount,
					"automountServiceAccountToken": false,
					"priorityClassName":            ServingPriority,
					"securityContext":              podsecurity.PodContext(),
					"affinity":                     map[string]any{"nodeAffinity": gpupool.AvoidGPUNodes()},
					"containers":                   []any{c},
					"volumes":                      apiproxy.Volumes(GatewayName),
				},
			},
		},
	}
}

// GatewayConfig is the data of the gateway's ConfigMap.
func GatewayConfig(ns string, engines []Engine) map[string]string {
	return map[string]string{"Caddyfile": GatewayProxy(ns, engines).Caddyfile()}
}

// GatewayNetworkPolicy admits the ingress controller and the client
// namespaces to the gateway, and lets it reach only the interceptor's
// proxy port (DNS comes from AllowDNS).
func GatewayNetworkPolicy(ns string, o Options) map[string]any {
	sources := []any{fromNamespace(o.IngressNamespace)}
	for _, c := range o.ClientNamespaces {
		sources = append(sources, fromNamespace(c))
	}
	return netpol(ns, GatewayName, map[string]any{
		"podSelector": map[string]any{"matchLabels": kube.AnyMap(GatewayPods)},
		"policyTypes": []any{"Ingress", "Egress"},
		"ingress":     []any{map[string]any{"from": sources, "ports": []any{tcp(InterceptorPort)}}},
		"egress":      []any{map[string]any{"to": []any{withPods(fromNamespace(KEDANamespace), kube.AnyMap(InterceptorPods))}, "ports": []any{tcp(InterceptorPort)}}},
	})
}

// The HTTP add-on's pods, by the labels its chart gives them (0.15.0
// templates/interceptor/deployment.yaml, templates/scaler/deployment.yaml);
// not app.kubernetes.io/instance, which Argo CD's label tracking rewrites.
var (
	InterceptorPods = map[string]string{"app.kubernetes.io/component": "interceptor", "app.kubernetes.io/name": "http-add-on"}
	ScalerPods      = map[string]string{"app.kubernetes.io/component": "scaler", "app.kubernetes.io/name": "http-add-on"}
)

// InterceptorAdminPort is where the add-on's scaler reads the
// interceptor's queue (values interceptor.admin.port).
const InterceptorAdminPort = 9090

// InterceptorNetworkPolicy closes the interceptor of a KEDA the program
// installs (its namespace is the program's) to everyone but the gateway:
// the interceptor routes by the Host header alone, so anyone reaching it
// could wake, and call, any scaled-to-zero model past its clients. The
// scaler reads its admin port.
func InterceptorNetworkPolicy(servingNS string) map[string]any {
	return netpol(KEDANamespace, "keda-add-ons-http-interceptor", map[string]any{
		"podSelector": map[string]any{"matchLabels": kube.AnyMap(InterceptorPods)},
		"policyTypes": []any{"Ingress"},
		"ingress": []any{
			map[string]any{"from": []any{withPods(fromNamespace(servingNS), kube.AnyMap(GatewayPods))}, "ports": []any{tcp(InterceptorPort)}},
			map[string]any{"from": []any{map[string]any{"podSelector": map[string]any{"matchLabels": kube.AnyMap(ScalerPods)}}}, "ports": []any{tcp(InterceptorAdminPort)}},
		},
	})
}
