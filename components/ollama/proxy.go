package ollama

import (
	"context"
	"fmt"
	"maps"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Ollama's pod: the chart's Ollama container listens on Port; the
// API-key proxy (Caddy) on ProxyPort, where the chart's Service sends
// every client. Ollama has no authentication of its own.
const (
	Port      = 11434
	ProxyPort = 8080
	// Home is where the model store is mounted and HOME points:
	// Ollama keeps its models under $HOME/.ollama/models and writes its
	// key pair to $HOME/.ollama (envconfig.Models, and the server's
	// initializeKeypair), so both live on the volume.
	Home = "/ollama"
	// ProxyKeyEnv carries the API key into the proxy.
	ProxyKeyEnv = "OLLAMA_API_KEY"
)

// ProxyCaddyfile is the proxy's configuration: GET or HEAD of / (Ollama's
// "Ollama is running", the probes' path) passes without a key; everything
// else needs "Authorization: Bearer <key>", the header vLLM's --api-key
// checks, so clients switch runtimes by endpoint only. The comparison is
// a CEL equality (no wildcards, unlike Caddy's header matcher). An empty
// key admits nobody: the guard says so, and an HTTP server trims the
// blank a "Bearer " header would end with anyway. The key is not passed on to Ollama. The site
// is plain HTTP on the port (the ingress terminates TLS); port and
// upstream are parameters for the tests, which run this very file in
// Caddy's own engine.
func ProxyCaddyfile(port int, upstream string) string {
	return fmt.Sprintf(`{
	admin off
	persist_config off
	auto_https off
}

http://:%[1]d {
	@health {
		method GET HEAD
		path /
	}
	handle @health {
		reverse_proxy %[2]s
	}
	@key expression {http.request.header.Authorization} == "Bearer " + {env.%[3]s} && {env.%[3]s} != ""
	handle @key {
		reverse_proxy %[2]s {
			header_up -Authorization
			flush_interval -1
		}
	}
	handle {
		header WWW-Authenticate "Bearer"
		respond "missing or wrong API key" 401
	}
}
`, port, upstream, ProxyKeyEnv)
}

// ProxyConfig is the data of the ConfigMap holding an Ollama model's
// Caddyfile (no secret in it: the key comes from the API-key Secret at
// run time).
func ProxyConfig() map[string]string {
	return map[string]string{"Caddyfile": ProxyCaddyfile(ProxyPort, fmt.Sprintf("127.0.0.1:%d", Port))}
}

// ThroughProxy points the chart's Service at the proxy: its targetPort is
// Ollama's port by name, fixed in the chart's template.
func ThroughProxy(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
	if a.Type != "kubernetes:core/v1:Service" {
		return nil
	}
	props, changed := ProxiedService(a.Props)
	if !changed {
		return nil
	}
	return &pulumi.ResourceTransformResult{Props: props, Opts: a.Opts}
}

// ProxiedService is a Service's inputs with every port's targetPort the
// proxy's, and whether there was a port.
func ProxiedService(props pulumi.Map) (pulumi.Map, bool) {
	spec, ok := props["spec"].(pulumi.Map)
	if !ok {
		return props, false
	}
	ports, ok := spec["ports"].(pulumi.Array)
	if !ok || len(ports) == 0 {
		return props, false
	}
	out := make(pulumi.Array, len(ports))
	for i, p := range ports {
		pm, ok := p.(pulumi.Map)
		if !ok {
			return props, false
		}
		pm = maps.Clone(pm)
		pm["targetPort"] = pulumi.Int(ProxyPort)
		out[i] = pm
	}
	spec = maps.Clone(spec)
	spec["ports"] = out
	props = maps.Clone(props)
	props["spec"] = spec
	return props, true
}
