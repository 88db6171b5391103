package ollama

import (
	"fmt"
	"strings"

	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
)

// Pod is what a model's pod takes from the serving namespace it runs in:
// its service account and priority class, where its scratch volumes are
// mounted, and the Secret holding the API key the proxy checks.
type Pod struct {
	ServiceAccount, PriorityClass, TmpPath string
	APIKeySecret, APIKeyField              string
}

// pullScript pulls the model only when the volume lacks it: `ollama show`
// reads the local manifest and never the registry, so a re-deploy, a
// restart or a rescheduled pod with the same volume pulls nothing. It then
// names the model after the config (`ollama cp`, a manifest copy), the id
// clients ask for on either runtime.
func pullScript(o Server) string {
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
func pullContainer(o Server, pod Pod) map[string]any {
	return map[string]any{
		"name": "pull-model", "image": o.Image,
		"command":         []any{"sh", "-c", pullScript(o)},
		"env":             envVars("HOME", Home, "OLLAMA_HOST", fmt.Sprintf("127.0.0.1:%d", Port)),
		"securityContext": podsecurity.ContainerContext(true),
		"resources":       resourceSpec("500m", "512Mi", "1Gi"),
		"volumeMounts": []any{
			map[string]any{"name": "ollama-data", "mountPath": Home},
			map[string]any{"name": "tmp", "mountPath": pod.TmpPath},
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
func proxyContainer(o Server, pod Pod) map[string]any {
	sc := podsecurity.ContainerContext(true)
	sc["capabilities"] = map[string]any{"drop": []any{"ALL"}, "add": []any{"NET_BIND_SERVICE"}}
	env := append(envVars("XDG_CONFIG_HOME", pod.TmpPath+"/config", "XDG_DATA_HOME", pod.TmpPath+"/data"),
		map[string]any{"name": ProxyKeyEnv, "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": pod.APIKeySecret, "key": pod.APIKeyField}}})
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
			map[string]any{"name": "proxy-tmp", "mountPath": pod.TmpPath},
		},
	}
}

// Values are the Ollama chart's values for one model: restricted,
// the model store on the program's claim, the model pulled once by an
// init container and loaded before the pod is ready (the chart's
// models.run, a postStart hook: probes start after it), the context and
// parallelism the fit check sized, and on a GPU pool the pool's resource,
// placement and runtime class.
func Values(o Server, pod Pod) map[string]any {
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
			"port": Port, "mountPath": Home, "gpu": gpu,
			"models": map[string]any{"run": []any{o.Name}},
		},
		"serviceAccount":     map[string]any{"create": false, "name": pod.ServiceAccount, "automount": false},
		"podSecurityContext": podsecurity.PodContext(),
		"securityContext":    podsecurity.ContainerContext(true),
		"priorityClassName":  pod.PriorityClass,
		"resources":          res,
		"persistentVolume":   map[string]any{"enabled": true, "existingClaim": o.Claim()},
		"extraEnv": envVars("HOME", Home,
			"OLLAMA_CONTEXT_LENGTH", fmt.Sprint(o.ContextLength), "OLLAMA_NUM_PARALLEL", fmt.Sprint(o.Parallel),
			// one model per server, kept loaded: it is what the pod is for
			"OLLAMA_MAX_LOADED_MODELS", "1", "OLLAMA_KEEP_ALIVE", "-1"),
		"volumes": []any{
			podsecurity.ScratchVolume("tmp", "2Gi"), podsecurity.ScratchVolume("proxy-tmp", "64Mi"),
			map[string]any{"name": "proxy-config", "configMap": map[string]any{"name": o.Release() + "-proxy"}},
		},
		"volumeMounts":   []any{map[string]any{"name": "tmp", "mountPath": pod.TmpPath}},
		"initContainers": []any{pullContainer(o, pod), proxyContainer(o, pod)},
		"service":        map[string]any{"port": 80},
		"tests":          map[string]any{"enabled": false},
	}
	if o.Pool == nil {
		v["affinity"] = map[string]any{"nodeAffinity": gpupool.AvoidGPUNodes()}
		if len(o.NodeSelector) > 0 {
			v["nodeSelector"] = kube.AnyMap(o.NodeSelector)
		}
		return v
	}
	// The chart's GPU switch adds the pool's resource as a limit and a
	// toleration of that resource's name; the pool's own tolerations
	// (the GPU taint as the program writes it, spot) come beside it.
	gpu["enabled"], gpu["type"], gpu["number"], gpu["nvidiaResource"] = true, "nvidia", 1, o.Pool.GPUResource
	v["nodeSelector"] = kube.AnyMap(o.Pool.NodeSelector)
	v["tolerations"] = o.Pool.TolerationValues()
	v["runtimeClassName"] = o.RuntimeClass
	return v
}

// Pods selects one Ollama model's pods (the chart's selector labels).
func Pods(o Server) map[string]any {
	return map[string]any{"app.kubernetes.io/name": "ollama", "app.kubernetes.io/instance": o.Release()}
}
