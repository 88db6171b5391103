package serving

import (
	"fmt"

	"github.com/natron/gpu-node-pools/internal/podsecurity"
)

// GPUs work for the non-root user: the NVIDIA container toolkit injects
// each device node with the host node's file mode and group, leaving the
// owner to the container's user, and adds the device's group to the
// process when the node is not world read/writable
// (nvidia-container-toolkit v1.20.2, internal/edits/device.go,
// fromPathOrDefault and getAdditionalGIDs); the driver creates the nodes
// 0666 unless NVreg_DeviceFileMode says otherwise. The library paths it
// writes are world-readable "for the cases where the container is run as
// a non-root user" (internal/ldconfig/ldconfig.go).

// ModelServerAccount runs the engines: a service account without an API
// token, as the engines never call the Kubernetes API.
const ModelServerAccount = "model-server"

// Where vLLM writes, under a read-only root filesystem. The image
// (vllm/vllm-openai:v0.11.0, docker/Dockerfile) declares no USER, so HOME
// would be the root's /root, unwritable for our user. In vLLM v0.11.0's
// vllm/envs.py, VLLM_CACHE_ROOT (torch.compile's cache,
// torch_compile_cache/ below it) defaults to ~/.cache/vllm and
// VLLM_CONFIG_ROOT to ~/.config/vllm (get_default_cache_root,
// get_default_config_root); Triton's kernel cache is ~/.triton/cache
// (triton/runtime/cache.py, default_cache_dir) and FlashInfer's JIT cache
// ~/.cache/flashinfer. VLLM_RPC_BASE_PATH, the engine's IPC sockets,
// defaults to tempfile.gettempdir(), /tmp, where torch's inductor cache
// (/tmp/torchinductor_<user>) and the chart's HF_HOME (/tmp) also live.
const (
	VLLMHome = "/home/vllm"
	TmpPath  = "/tmp"
)

// engineEnv makes vLLM's writes land in the emptyDirs: HOME for the
// caches above, USER for torch's inductor cache (getpass.getuser() fails
// for a UID without a passwd entry unless USER is set). The weights are
// local: no Hugging Face Hub calls, and no usage stats (egress is denied
// anyway; this keeps the engine from waiting on it).
func engineEnv() []any {
	env := []any{}
	for _, kv := range [][2]string{
		{"HOME", VLLMHome}, {"USER", "vllm"},
		{"HF_HUB_OFFLINE", "1"}, {"VLLM_NO_USAGE_STATS", "1"}, {"DO_NOT_TRACK", "1"},
	} {
		env = append(env, map[string]any{"name": kv[0], "value": kv[1]})
	}
	return env
}

// Scratch volumes: compile caches reach a few GiB (torch.compile and
// Triton kernels for every captured batch size).
func engineScratch() (volumes, mounts []any) {
	for _, v := range []struct{ name, path, size string }{{"home", VLLMHome, "8Gi"}, {"tmp", TmpPath, "8Gi"}} {
		volumes = append(volumes, podsecurity.ScratchVolume(v.name, v.size))
		mounts = append(mounts, map[string]any{"name": v.name, "mountPath": v.path})
	}
	return volumes, mounts
}

// JobSecurity is what a batch job's image needs beyond the restricted
// defaults (gpu-node-pools:batchJobs[i].security). Anything set here is
// checked against the level the batch namespace enforces.
type JobSecurity struct {
	// RunAsUser replaces the non-root default user; 0 runs as root, which
	// needs a batch namespace at baseline.
	RunAsUser *int64 `json:"runAsUser,omitempty"`
	// RunAsGroup replaces the default group.
	RunAsGroup *int64 `json:"runAsGroup,omitempty"`
	// Capabilities are added to the container: restricted allows only
	// NET_BIND_SERVICE, baseline a short list, others need privileged.
	Capabilities []string `json:"capabilities,omitempty"`
	// AllowPrivilegeEscalation lets setuid binaries (sudo) gain privileges;
	// needs baseline.
	AllowPrivilegeEscalation bool `json:"allowPrivilegeEscalation,omitempty"`
	// WritableRootFilesystem is for images that write outside HOME and /tmp
	// (no Pod Security level forbids it; it only widens what a compromised
	// job can change in its container).
	WritableRootFilesystem bool `json:"writableRootFilesystem,omitempty"`
}

// BatchHome is a batch job's HOME, an emptyDir like its /tmp.
const BatchHome = "/home/batch"

// jobPodSecurity is a batch job's pod spec security: the restricted
// defaults with what the job declares on top.
func jobPodSecurity(s JobSecurity) (pod, container map[string]any) {
	pod, container = podsecurity.PodContext(), podsecurity.ContainerContext(!s.WritableRootFilesystem)
	if s.RunAsUser != nil {
		pod["runAsUser"] = *s.RunAsUser
		if *s.RunAsUser == 0 {
			delete(pod, "runAsNonRoot")
			delete(container, "runAsNonRoot")
		}
	}
	if s.RunAsGroup != nil {
		pod["runAsGroup"] = *s.RunAsGroup
	}
	if len(s.Capabilities) > 0 {
		add := make([]any, len(s.Capabilities))
		for i, c := range s.Capabilities {
			add[i] = c
		}
		container["capabilities"].(map[string]any)["add"] = add
	}
	if s.AllowPrivilegeEscalation {
		container["allowPrivilegeEscalation"] = true
	}
	return pod, container
}

// JobPodSpec is the security-relevant part of a batch job's pod spec:
// what Pod Security admission judges (see NeededLevel).
func JobPodSpec(name string, s JobSecurity) map[string]any {
	pod, container := jobPodSecurity(s)
	return map[string]any{
		"securityContext": pod,
		"containers":      []any{map[string]any{"name": name, "image": "job", "securityContext": container}},
	}
}

// NeededLevel is the strictest Pod Security level that admits a batch
// job's pods, as the admission library kube-apiserver runs judges them,
// with its reasons at the level just above.
func (s JobSecurity) NeededLevel(name string) (level string, why []string, err error) {
	spec := JobPodSpec(name, s)
	level, err = podsecurity.Needs(spec)
	if err != nil || level == podsecurity.Restricted {
		return level, nil, err
	}
	stricter := podsecurity.Restricted
	if level == podsecurity.Privileged {
		stricter = podsecurity.Baseline
	}
	why, err = podsecurity.Violations(stricter, spec)
	if err != nil {
		return "", nil, fmt.Errorf("batch job %s: %w", name, err)
	}
	return level, why, nil
}
