package ollama

import (
	"fmt"

	"github.com/natron/gpu-node-pools/internal/apiproxy"
	"github.com/natron/gpu-node-pools/internal/helm"
)

// Ollama's pod: Ollama listens on loopback only, at Port; the API-key
// proxy (Caddy) on ProxyPort, the pod's only listener, where the chart's
// Service sends every client. Ollama has no authentication of its own.
const (
	Port      = 11434
	ProxyPort = 8080
	// Host is where Ollama listens: loopback, reached through the proxy.
	Host = "127.0.0.1"
	// Home is where the model store is mounted and HOME points:
	// Ollama keeps its models under $HOME/.ollama/models and writes its
	// key pair to $HOME/.ollama (envconfig.Models, and the server's
	// initializeKeypair), so both live on the volume.
	Home = "/ollama"
	// ProxyKeyEnv carries the API key into the proxy.
	ProxyKeyEnv = "OLLAMA_API_KEY"
	// ProxyContainer names the proxy in the pod.
	ProxyContainer = "api-key-proxy"
)

// Proxy is the proxy in front of Ollama: the OpenAI paths the product
// offers with the model's key, which is not passed on (Ollama has no use
// for it), GET or HEAD of / ("Ollama is running", the probes' path)
// without one. Ollama's own API (/api/pull, /api/delete, /api/create,
// ...) is not reachable, with a key or without.
func Proxy() apiproxy.Sidecar {
	return apiproxy.Sidecar{
		Port: ProxyPort, Upstream: fmt.Sprintf("%s:%d", Host, Port), KeyEnv: ProxyKeyEnv,
		Health: apiproxy.Health{Path: "/", Methods: []string{"GET", "HEAD"}},
	}
}

// ProxyConfig is the data of the ConfigMap holding an Ollama model's
// Caddyfile (no secret in it: the key comes from the API-key Secret at
// run time).
func ProxyConfig() map[string]string {
	return map[string]string{"Caddyfile": Proxy().Caddyfile()}
}

// Patches change what the chart renders where its values cannot: Ollama
// listens on loopback (the chart sets OLLAMA_HOST to 0.0.0.0), its probes
// read the health path through the proxy (the chart's probe port is
// Ollama's by name), and the Service sends clients to the proxy (its
// targetPort is Ollama's by name, fixed in the chart's template).
func Patches() []helm.Patch {
	return []helm.Patch{onLoopback, throughProxy}
}

func onLoopback(o map[string]any) {
	if o["kind"] != "Deployment" {
		return
	}
	spec, _ := o["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	pod, _ := tmpl["spec"].(map[string]any)
	containers, _ := pod["containers"].([]any)
	if len(containers) == 0 {
		// Ollama would listen on every interface: stop rather than run it
		panic("Ollama's Deployment: its containers are not known; Ollama cannot be kept to loopback")
	}
	for _, c := range containers {
		c, _ := c.(map[string]any)
		if c == nil || c["name"] != "ollama" {
			continue
		}
		env, _ := c["env"].([]any)
		for _, e := range env {
			if e, _ := e.(map[string]any); e != nil && e["name"] == "OLLAMA_HOST" {
				e["value"] = fmt.Sprintf("%s:%d", Host, Port)
			}
		}
		for _, probe := range []string{"livenessProbe", "readinessProbe", "startupProbe"} {
			if p, _ := c[probe].(map[string]any); p != nil {
				if get, _ := p["httpGet"].(map[string]any); get != nil {
					get["port"] = ProxyPort
				}
			}
		}
	}
}

func throughProxy(o map[string]any) {
	if o["kind"] != "Service" {
		return
	}
	spec, _ := o["spec"].(map[string]any)
	ports, _ := spec["ports"].([]any)
	for _, p := range ports {
		if p, _ := p.(map[string]any); p != nil {
			p["targetPort"] = ProxyPort
		}
	}
}
