package ollama

import (
	"fmt"
	"strings"

	"github.com/natron/gpu-node-pools/internal/apiproxy"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
)

// Pod is what a model's pod takes from the serving namespace it runs in:
// its service account and priority class, where its scratch volumes are
// mounted, and the Secret holding the API key the proxy checks.
type Pod struct {
	ServiceAccount, PriorityClass, TmpPath string
	// APIKeySecret holds the models' keys (each model's field is its
	// Server's APIKeyField).
	APIKeySecret string
}

// pullScript pulls the model only when the volume lacks it: `ollama show`
// reads the local manifest and never the registry, so a rerun or a second
// up pulls nothing. It then names the model after the config (`ollama
// cp`, a manifest copy), the id clients ask for on either runtime, and
// marks the store as holding this source.
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
kill $!
touch %[3]s`, o.Ref.Short(), o.Name, o.Marker())
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

// PullComponent labels the pull Jobs' pods: their network policy, the
// only one that lets an Ollama pod reach the internet, selects them.
const PullComponent = "ollama-pull"

// PullJob fills the model store from the Ollama registry, once per
// source (the Job's name carries it: a Job's template cannot change),
// in a pod of its own: the server never needs the internet, so its pods
// have no egress at all. On CPU nodes, restricted, without an API token.
func PullJob(ns string, o Server, pod Pod, labels map[string]any) map[string]any {
	podLabels := map[string]any{"gpu-node-pools/model": o.Name}
	for k, v := range labels {
		podLabels[k] = v
	}
	return kube.FillJob(o.Release()+"-pull-"+o.SourceKey(), ns, map[string]any{"gpu-node-pools/model": o.Name}, podLabels, map[string]any{
		"serviceAccountName":           pod.ServiceAccount,
		"automountServiceAccountToken": false,
		"securityContext":              podsecurity.PodContext(),
		"affinity":                     map[string]any{"nodeAffinity": gpupool.AvoidGPUNodes()},
		"containers": []any{map[string]any{
			"name": "pull", "image": o.Image,
			"command":         []any{"sh", "-c", pullScript(o)},
			"env":             envVars("HOME", Home, "OLLAMA_HOST", fmt.Sprintf("%s:%d", Host, Port)),
			"securityContext": podsecurity.ContainerContext(true),
			"resources":       resourceSpec("500m", "512Mi", "1Gi"),
			"volumeMounts": []any{
				map[string]any{"name": "ollama-data", "mountPath": Home},
				map[string]any{"name": "tmp", "mountPath": pod.TmpPath},
			},
		}},
		"volumes": []any{
			map[string]any{"name": "ollama-data", "persistentVolumeClaim": map[string]any{"claimName": o.Claim()}},
			podsecurity.ScratchVolume("tmp", "2Gi"),
		},
	})
}

// waitContainer holds the server until the pull Job has filled the
// store with this source: the pull's hours never count against the
// probes, which start after it.
func waitContainer(o Server, pod Pod) map[string]any {
	return map[string]any{
		"name": "wait-for-model", "image": o.WaitImage,
		"command":         []any{"sh", "-c", fmt.Sprintf("until [ -f %s ]; do echo waiting for the pull; sleep 10; done", o.Marker())},
		"securityContext": podsecurity.ContainerContext(true),
		"resources":       resourceSpec("10m", "16Mi", "64Mi"),
		"volumeMounts":    []any{map[string]any{"name": "ollama-data", "mountPath": Home, "readOnly": true}},
	}
}

// proxyContainer is the API-key proxy, a native sidecar: the chart has
// no slot for a second container, and a sidecar starts before Ollama and
// stops after it.
func proxyContainer(o Server, pod Pod) map[string]any {
	return apiproxy.Container(ProxyContainer, o.ProxyImage, pod.TmpPath, []apiproxy.Port{{Name: "proxy", Port: ProxyPort}},
		[]apiproxy.Key{{Env: ProxyKeyEnv, Secret: pod.APIKeySecret, Field: o.APIKeyField}}, true)
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
		"volumes":        append([]any{podsecurity.ScratchVolume("tmp", "2Gi")}, apiproxy.Volumes(o.Release()+"-proxy")...),
		"volumeMounts":   []any{map[string]any{"name": "tmp", "mountPath": pod.TmpPath}},
		"initContainers": []any{waitContainer(o, pod), proxyContainer(o, pod)},
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
