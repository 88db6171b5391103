package serving

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
)

// Ollama's pod: the chart's Ollama container listens on OllamaPort; the
// API-key proxy (Caddy) on ProxyPort, where the chart's Service sends
// every client. Ollama has no authentication of its own.
const (
	OllamaPort = 11434
	ProxyPort  = 8080
	// OllamaHome is where the model store is mounted and HOME points:
	// Ollama keeps its models under $HOME/.ollama/models and writes its
	// key pair to $HOME/.ollama (envconfig.Models, and the server's
	// initializeKeypair), so both live on the volume.
	OllamaHome = "/ollama"
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
	return map[string]string{"Caddyfile": ProxyCaddyfile(ProxyPort, fmt.Sprintf("127.0.0.1:%d", OllamaPort))}
}

// pullScript pulls the model only when the volume lacks it: `ollama show`
// reads the local manifest and never the registry, so a re-deploy, a
// restart or a rescheduled pod with the same volume pulls nothing. It then
// names the model after the config (`ollama cp`, a manifest copy), the id
// clients ask for on either runtime.
func pullScript(o OllamaServer) string {
	return fmt.Sprintf(`set -e
ollama serve >/tmp/ollama-serve.log 2>&1 &
until ollama list >/dev/null 2>&1; do sleep 1; done
if ollama show %[1]q >/dev/null 2>&1; then
  echo "%[1]s is in the volume: not pulling"
else
  ollama pull %[1]q
fi
ollama cp %[1]q %[2]q
kill $!`, o.Ref.Short(), o.Name)
}

func envVars(kv ...string) []any {
	var out []any
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, map[string]any{"name": kv[i], "value": kv[i+1]})
	}
	return out
}

func resourceSpec(cpu, memory, memoryLimit string) map[string]any {
	return map[string]any{"requests": map[string]any{"cpu": cpu, "memory": memory}, "limits": map[string]any{"memory": memoryLimit}}
}

// pullContainer fills the model store before Ollama starts: the pull's
// hours never count against the probes, which start after it.
func pullContainer(o OllamaServer) map[string]any {
	return map[string]any{
		"name": "pull-model", "image": o.Image,
		"command":         []any{"sh", "-c", pullScript(o)},
		"env":             envVars("HOME", OllamaHome, "OLLAMA_HOST", fmt.Sprintf("127.0.0.1:%d", OllamaPort)),
		"securityContext": podsecurity.ContainerContext(true),
		"resources":       resourceSpec("500m", "512Mi", "1Gi"),
		"volumeMounts": []any{
			map[string]any{"name": "ollama-data", "mountPath": OllamaHome},
			map[string]any{"name": "tmp", "mountPath": TmpPath},
		},
	}
}

// proxyContainer is the API-key proxy, a native sidecar (an init container
// that keeps running): the chart has no slot for a second container, and
// a sidecar starts before Ollama and stops after it. The Caddy image sets
// cap_net_bind_service=+ep on its binary, so with every capability
// dropped exec fails with EPERM (caddyserver/caddy-docker issue 396);
// NET_BIND_SERVICE, the one capability the restricted profile lets a pod
// add, is added back. Caddy writes only under XDG_*_HOME.
func proxyContainer(o OllamaServer) map[string]any {
	sc := podsecurity.ContainerContext(true)
	sc["capabilities"] = map[string]any{"drop": []any{"ALL"}, "add": []any{"NET_BIND_SERVICE"}}
	env := append(envVars("XDG_CONFIG_HOME", TmpPath+"/config", "XDG_DATA_HOME", TmpPath+"/data"),
		map[string]any{"name": ProxyKeyEnv, "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": APIKeySecret, "key": APIKeyField}}})
	return map[string]any{
		"name": "api-key-proxy", "image": o.ProxyImage, "restartPolicy": "Always",
		"command":         []any{"caddy", "run", "--config", "/etc/caddy/Caddyfile", "--adapter", "caddyfile"},
		"ports":           []any{map[string]any{"name": "proxy", "containerPort": ProxyPort, "protocol": "TCP"}},
		"env":             env,
		"securityContext": sc,
		"resources":       resourceSpec("50m", "64Mi", "256Mi"),
		"startupProbe":    map[string]any{"tcpSocket": map[string]any{"port": ProxyPort}, "periodSeconds": 2, "failureThreshold": 30},
		"volumeMounts": []any{
			map[string]any{"name": "proxy-config", "mountPath": "/etc/caddy", "readOnly": true},
			map[string]any{"name": "proxy-tmp", "mountPath": TmpPath},
		},
	}
}

// OllamaValues are the Ollama chart's values for one model: restricted,
// the model store on the program's claim, the model pulled once by an
// init container and loaded before the pod is ready (the chart's
// models.run, a postStart hook: probes start after it), the context and
// parallelism the fit check sized, and on a GPU pool the pool's resource,
// placement and runtime class.
func OllamaValues(o OllamaServer) map[string]any {
	repo, tag, _ := strings.Cut(o.Image, ":")
	res := resourceSpec("1", fmt.Sprintf("%dGi", o.MemoryGi()), fmt.Sprintf("%dGi", o.MemoryGi()))
	if o.Pool == nil {
		res["requests"].(map[string]any)["cpu"] = "4"
	}
	gpu := map[string]any{"enabled": false}
	v := map[string]any{
		"fullnameOverride": o.Release(),
		"image":            map[string]any{"repository": repo, "tag": tag},
		"ollama": map[string]any{
			"port": OllamaPort, "mountPath": OllamaHome, "gpu": gpu,
			"models": map[string]any{"run": []any{o.Name}},
		},
		"serviceAccount":     map[string]any{"create": false, "name": ModelServerAccount, "automount": false},
		"podSecurityContext": podsecurity.PodContext(),
		"securityContext":    podsecurity.ContainerContext(true),
		"priorityClassName":  ServingPriority,
		"resources":          res,
		"persistentVolume":   map[string]any{"enabled": true, "existingClaim": o.Claim()},
		"extraEnv": envVars("HOME", OllamaHome,
			"OLLAMA_CONTEXT_LENGTH", fmt.Sprint(o.ContextLength), "OLLAMA_NUM_PARALLEL", fmt.Sprint(o.Parallel),
			// one model per server, kept loaded: it is what the pod is for
			"OLLAMA_MAX_LOADED_MODELS", "1", "OLLAMA_KEEP_ALIVE", "-1"),
		"volumes": []any{
			podsecurity.ScratchVolume("tmp", "2Gi"), podsecurity.ScratchVolume("proxy-tmp", "64Mi"),
			map[string]any{"name": "proxy-config", "configMap": map[string]any{"name": o.Release() + "-proxy"}},
		},
		"volumeMounts":   []any{map[string]any{"name": "tmp", "mountPath": TmpPath}},
		"initContainers": []any{pullContainer(o), proxyContainer(o)},
		"service":        map[string]any{"port": 80},
		"tests":          map[string]any{"enabled": false},
	}
	if o.Pool == nil {
		v["affinity"] = map[string]any{"nodeAffinity": gpupool.AvoidGPUNodes()}
		if len(o.NodeSelector) > 0 {
			v["nodeSelector"] = toAnyMap(o.NodeSelector)
		}
		return v
	}
	// The chart's GPU switch adds the pool's resource as a limit and a
	// toleration of that resource's name; the pool's own tolerations
	// (the GPU taint as the program writes it, spot) come beside it.
	gpu["enabled"], gpu["type"], gpu["number"], gpu["nvidiaResource"] = true, "nvidia", 1, o.Pool.GPUResource
	v["nodeSelector"] = toAnyMap(o.Pool.NodeSelector)
	v["tolerations"] = poolTolerations(*o.Pool)
	v["runtimeClassName"] = o.RuntimeClass
	return v
}

func toAnyMap(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ollamaPods selects one Ollama model's pods (the chart's selector labels).
func ollamaPods(o OllamaServer) map[string]any {
	return map[string]any{"app.kubernetes.io/name": "ollama", "app.kubernetes.io/instance": o.Release()}
}

// OllamaNetworkPolicy admits the ingress controller and the client
// namespaces to the proxy's port only: Ollama's own port is reachable
// from inside the pod alone, so every request passes the key check.
func OllamaNetworkPolicy(ns string, o OllamaServer, opts Options) map[string]any {
	sources := []any{fromNamespace(opts.IngressNamespace)}
	for _, c := range opts.ClientNamespaces {
		sources = append(sources, fromNamespace(c))
	}
	return netpol(ns, "model-"+o.Name, map[string]any{
		"podSelector": map[string]any{"matchLabels": ollamaPods(o)},
		"policyTypes": []any{"Ingress"},
		"ingress":     []any{map[string]any{"from": sources, "ports": []any{tcp(ProxyPort)}}},
	})
}

// PrivateRanges are never a registry: the pull's egress excludes them,
// so an Ollama pod reaches nothing inside the cluster or the site's
// networks.
var PrivateRanges = []any{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16"}

// OllamaEgress lets the pull reach the Ollama registry over HTTPS. Its
// blobs come from a CDN whose addresses change, so the policy admits
// public addresses on 443 rather than names.
func OllamaEgress(ns string, o OllamaServer) map[string]any {
	return netpol(ns, "model-"+o.Name+"-pull", map[string]any{
		"podSelector": map[string]any{"matchLabels": ollamaPods(o)},
		"policyTypes": []any{"Egress"},
		"egress": []any{map[string]any{
			"to":    []any{map[string]any{"ipBlock": map[string]any{"cidr": "0.0.0.0/0", "except": PrivateRanges}}},
			"ports": []any{tcp(443)},
		}},
	})
}

// OllamaIngress publishes the model like a vLLM model: same TLS, same
// path, the proxy behind the chart's Service.
func OllamaIngress(ns string, o OllamaServer, opts Options) map[string]any {
	return modelIngress(ns, o.Name, o.Hostname, map[string]any{"name": o.Release(), "port": map[string]any{"number": 80}}, 3600, opts)
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
