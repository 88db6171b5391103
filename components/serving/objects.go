package serving

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/natron/gpu-node-pools/internal/apiproxy"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
)

// Names of the shared objects.
const (
	APIKeySecret    = "gpu-node-pools-api-key"
	StorageSecret   = "gpu-node-pools-storage"
	ServingPriority = "gpu-serving"
	BatchPriority   = "gpu-batch"
	// RcloneImage is the release .ci/toolchain/rclone.sh builds for the
	// download's tests.
	RcloneImage = "rclone/rclone:1.75.1"
	WaitImage   = "busybox:1.37.0"
)

// PriorityClass is one of the priorities model serving brings.
type PriorityClass struct {
	Name, Description, Preemption string
	Value                         int
}

// PriorityClasses: real-time inference always wins over batch work for GPUs.
var PriorityClasses = []PriorityClass{
	{ServingPriority, "model serving: preempts batch work", "PreemptLowerPriority", 100000},
	{BatchPriority, "off-peak batch work: yields to serving, never preempts", "Never", 1000},
}

// Release is the Helm release name of a model.
func Release(model string) string { return "vllm-" + model }

// ServiceName is the in-cluster Service of a model's engine (chart naming).
func ServiceName(model string) string { return Release(model) + "-" + model + "-engine-service" }

// Endpoint is the model's in-cluster OpenAI-compatible endpoint: its
// engine Service, or its wake Service (the interceptor) when it scales
// from zero.
func Endpoint(ns string, e Engine) string {
	if e.ScalesFromZero() {
		return fmt.Sprintf("http://%s.%s.svc:%d/v1", RouteName(e.Name), ns, InterceptorPort)
	}
	return fmt.Sprintf("http://%s.%s.svc/v1", ServiceName(e.Name), ns)
}

// WeightsClaim names a model's weights cache.
func WeightsClaim(model string) string { return "weights-" + model }

// WeightsClaimGi sizes the cache: the weights plus a tenth and 10 Gi for
// tokenizer files and the download's temporary files.
func WeightsClaimGi(weightsGB float64) int {
	return int(math.Ceil(weightsGB*1e9/(1<<30)*1.1)) + 10
}

// rcloneSource turns a config source into an rclone path on the remote
// "src" (configured from the storage Secret's RCLONE_CONFIG_SRC_* keys).
func rcloneSource(source string) string {
	for _, p := range []string{"s3://", "az://"} {
		if rest, ok := strings.CutPrefix(source, p); ok {
			return "src:" + rest
		}
	}
	return "src:" + source
}

// DownloadServiceAccount runs the download Jobs; with workload identity it
// carries the managed identity's client ID.
const DownloadServiceAccount = "weights-download"

// DownloadComponent labels the download Jobs' pods (their network policy
// selects them by it).
const DownloadComponent = "weights-download"

// ComponentLabel names what a pod of the serving namespace is.
const ComponentLabel = "gpu-node-pools/component"

// SourceKey names one source's copy of a model's weights: a new source is
// a new copy, downloaded again, and the engines restart on it.
func SourceKey(source string) string {
	sum := sha256.Sum256([]byte(source))
	return hex.EncodeToString(sum[:6])
}

// WeightsDir is where the engine's source's weights are in its cache.
func WeightsDir(m Engine) string { return WeightsPath + "/" + m.Name + "/" + SourceKey(m.Source) }

// WeightFiles are what the download copies of a model's directory: the
// weights as safetensors (pickle formats, .bin and .pt, run code when they
// load: never copied), the configs and the tokenizer's files. Python
// files only for a model that trusts its code, the manifest when pinned.
var WeightFiles = []string{"*.safetensors", "*.json", "tokenizer.model", "*.tiktoken", "merges.txt", "vocab.txt", "*.jinja"}

// shellQuote quotes s for sh, as one word taken as it is.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'" }

// downloadScript is the download Job's script: nothing is marked complete
// (and no engine loads it) unless the copy is whole and, with checksums,
// every file is the one the pinned manifest lists, and no file is one it
// does not list. A source with Python files is refused unless the model
// trusts its code: vLLM would import them (auto_map in config.json,
// CVE-2026-22807). The copy lands in a partial directory, renamed once
// checked; other sources' copies go first (the engines of an old source
// keep theirs in GPU memory until the rollout replaces them).
func downloadScript(m Engine, key string) string {
	model, dir := WeightsPath+"/"+m.Name, WeightsDir(m)
	var b strings.Builder
	fmt.Fprintf(&b, `set -eu
dir=%[1]s
if [ -f "$dir/.complete" ]; then echo "weights already cached"; exit 0; fi
mkdir -p %[2]s
find %[2]s -mindepth 1 -maxdepth 1 ! -name %[3]s -exec rm -rf {} +
rm -rf "$dir" "$dir.partial"
src=%[4]s
`, dir, model, key, shellQuote(rcloneSource(m.Source)))
	include := slices.Clone(WeightFiles)
	if m.TrustRemoteCode {
		include = append(include, "*.py")
	} else {
		fmt.Fprintf(&b, `code=$(rclone lsf -R --files-only --include '*.py' "$src")
if [ -n "$code" ]; then
  echo "refusing the weights of %[1]s: the source holds Python files, which vLLM would run:" >&2
  echo "$code" >&2
  echo "if the model needs its code, set models[].trustRemoteCode with checksums that pin it" >&2
  exit 1
fi
`, m.Name)
	}
	if m.Checksums != nil {
		include = append(include, m.Checksums.ManifestName())
	}
	b.WriteString(`mkdir -p "$dir.partial"
rclone copy --transfers 16 --checkers 16`)
	for _, f := range include {
		b.WriteString(" --include " + shellQuote(f))
	}
	b.WriteString(` "$src" "$dir.partial"
cd "$dir.partial"
if [ ! -f config.json ] || ! ls ./*.safetensors >/dev/null 2>&1; then
  echo "refusing the weights: no config.json or no safetensors files in the source (pickle weights, .bin and .pt, are never copied)" >&2
  exit 1
fi
`)
	if c := m.Checksums; c != nil {
		fmt.Fprintf(&b, `echo %[1]s | sha256sum -c -
sha256sum -c %[2]s
tmp=$(mktemp -d)
sed 's/^[0-9a-fA-F]* [ *]//; s|^\./||' %[2]s | sort > "$tmp/listed"
find . -type f ! -name %[2]s | sed 's|^\./||' | sort > "$tmp/copied"
unlisted=$(grep -vxF -f "$tmp/listed" "$tmp/copied" || true)
if [ -n "$unlisted" ]; then
  echo "refusing the weights: files the manifest %[2]s does not list:" >&2
  echo "$unlisted" >&2
  exit 1
fi
`, shellQuote(c.SHA256+"  "+c.ManifestName()), c.ManifestName())
	}
	b.WriteString(`cd /
mv "$dir.partial" "$dir"
touch "$dir/.complete"`)
	return b.String()
}

// DownloadJob fills a model's weights cache once per source
// (downloadScript): a marker file records a complete, checked copy, so a
// rerun (or a second up) does no work, and a new source, kept in a
// directory of its own, is copied again. The Job's name carries the
// source too: a Job's template cannot change, so a new source is a new
// Job, and GitOps tools replace rather than patch it. It runs as the
// restricted non-root user: fsGroup makes the cache's files the group's,
// which every engine replica shares. rclone writes only its HOME (config
// lookups, ~/.cache/rclone) and /tmp, both emptyDirs. No API token: with
// workload identity the identity's webhook projects its own token volume,
// whatever the pod's automount; the pod carries the labels the target
// gives (id). Its credential (the storage Secret, or the identity) is the
// weights' read-only one, and nothing else in the stack mounts it.
func DownloadJob(ns string, m Engine, st Storage, id kube.WorkloadIdentity) map[string]any {
	key := SourceKey(m.Source)
	script := downloadScript(m, key)
	labels := id.PodLabelValues()
	labels[ComponentLabel] = DownloadComponent
	return kube.FillJob("weights-"+m.Name+"-"+key, ns, map[string]any{"gpu-node-pools/model": m.Name}, labels, map[string]any{
		"serviceAccountName":           DownloadServiceAccount,
		"automountServiceAccountToken": false,
		"securityContext":              podsecurity.PodContext(),
		"containers": []any{map[string]any{
			"name": "download", "image": m.DownloadImage,
			"command":         []any{"sh", "-c", script},
			"env":             []any{map[string]any{"name": "HOME", "value": TmpPath}},
			"envFrom":         []any{map[string]any{"secretRef": map[string]any{"name": StorageSecret}}},
			"securityContext": podsecurity.ContainerContext(true),
			"resources": map[string]any{
				"requests": map[string]any{"cpu": "500m", "memory": "512Mi"},
				"limits":   map[string]any{"cpu": "2", "memory": "2Gi"},
			},
			"volumeMounts": []any{
				map[string]any{"name": "weights", "mountPath": WeightsPath},
				map[string]any{"name": "tmp", "mountPath": TmpPath},
			},
		}},
		"volumes": []any{
			map[string]any{"name": "weights", "persistentVolumeClaim": map[string]any{"claimName": WeightsClaim(m.Name)}},
			podsecurity.ScratchVolume("tmp", "1Gi"),
		},
	})
}

// WaitForWeights is the engine's init container: no replica starts loading
// before the cache holds its source's weights.
func WaitForWeights(m Engine) map[string]any {
	return map[string]any{
		"name":    "wait-for-weights",
		"image":   m.WaitImage,
		"command": []any{"sh", "-c"},
		"args":    []any{fmt.Sprintf("until [ -f %s/.complete ]; do echo waiting for weights; sleep 10; done", WeightsDir(m))},
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "10m", "memory": "16Mi"},
			"limits":   map[string]any{"cpu": "100m", "memory": "64Mi"},
		},
		"mountPvcStorage":   false,
		"extraVolumeMounts": []any{map[string]any{"name": "weights", "mountPath": WeightsPath, "readOnly": true}},
	}
}

// Ingress publishes a model with a hostname over TLS, the certificate issued
// by cert-manager from the configured ClusterIssuer. A model that scales
// from zero is reached through its wake Service (the interceptor, which
// holds the request through a cold start, so the read timeout covers one).
func Ingress(ns string, m Engine, o Options) map[string]any {
	backend := map[string]any{"name": ServiceName(m.Name), "port": map[string]any{"number": 80}}
	readTimeout := ResponseSeconds
	if m.ScalesFromZero() {
		backend = map[string]any{"name": RouteName(m.Name), "port": map[string]any{"number": InterceptorPort}}
		readTimeout = max(readTimeout, ColdStartSeconds(m))
	}
	return modelIngress(ns, m.Name, m.Hostname, backend, readTimeout, o)
}

// ResponseSeconds bounds one reply: a long non-streaming completion sends
// nothing until it is done. The ingress and the interceptor both wait this
// long.
const ResponseSeconds = 3600

// ingressPaths route the OpenAI paths the product offers, and nothing
// else, to the backend: the ingress controller answers any other path
// itself (404), so it never reaches a model, let alone wakes one.
func ingressPaths(backend map[string]any) []any {
	var out []any
	for _, p := range apiproxy.IngressPaths() {
		out = append(out, map[string]any{"path": p.Path, "pathType": p.Type, "backend": map[string]any{"service": backend}})
	}
	return out
}

// modelIngress is a model's public TLS endpoint, whatever serves it:
// clients switch runtimes by hostname alone.
func modelIngress(ns, model, hostname string, backend map[string]any, readTimeout int, o Options) map[string]any {
	return map[string]any{
		"apiVersion": "networking.k8s.io/v1",
		"kind":       "Ingress",
		"metadata": map[string]any{
			"name": "model-" + model, "namespace": ns,
			"annotations": map[string]any{
				"cert-manager.io/cluster-issuer": o.ClusterIssuer,
				// long generations: do not cut streaming responses short
				"nginx.ingress.kubernetes.io/proxy-read-timeout": fmt.Sprint(readTimeout),
				"nginx.ingress.kubernetes.io/proxy-body-size":    "16m",
			},
		},
		"spec": map[string]any{
			"ingressClassName": o.IngressClass,
			"tls":              []any{map[string]any{"hosts": []any{hostname}, "secretName": "model-" + model + "-tls"}},
			"rules": []any{map[string]any{
				"host": hostname,
				"http": map[string]any{"paths": ingressPaths(backend)},
			}},
		},
	}
}

// Job is how one batch job runs: decided once, when the stack's plan is
// made.
type Job struct {
	BatchJobSpec
	// Pool is the pool the job runs on.
	Pool gpupool.Facts
	// RuntimeClass is as for Engine.
	RuntimeClass string
}

// NewJob is how the program runs a validated batch job on its pool.
func NewJob(j BatchJobSpec, pool gpupool.Facts, runtimeClass string) Job {
	j.DeadlineMinutes = cmp.Or(j.DeadlineMinutes, 240)
	return Job{BatchJobSpec: j, Pool: pool, RuntimeClass: runtimeClass}
}

// CronJob runs a batch job off-peak on its pool, below serving in priority.
func CronJob(ns string, j Job) map[string]any {
	deadline, runtimeClass := j.DeadlineMinutes, j.RuntimeClass
	tolerations, exprs := j.Pool.TolerationValues(), poolMatchExpressions(j.Pool)
	gpus := fmt.Sprint(j.GPUs)
	podSC, containerSC := jobPodSecurity(j.Security)
	container := map[string]any{
		"name": j.Name, "image": j.Image,
		"securityContext": containerSC,
		"env":             []any{map[string]any{"name": "HOME", "value": BatchHome}},
		"volumeMounts": []any{
			map[string]any{"name": "home", "mountPath": BatchHome},
			map[string]any{"name": "tmp", "mountPath": TmpPath},
		},
		"resources": map[string]any{
			"requests": map[string]any{j.Pool.GPUResource: gpus, "cpu": fmt.Sprint(4 * j.GPUs), "memory": fmt.Sprintf("%dGi", 16*j.GPUs)},
			"limits":   map[string]any{j.Pool.GPUResource: gpus, "cpu": fmt.Sprint(8 * j.GPUs), "memory": fmt.Sprintf("%dGi", 32*j.GPUs)},
		},
	}
	if len(j.Command) > 0 {
		cmd := make([]any, len(j.Command))
		for i, c := range j.Command {
			cmd[i] = c
		}
		container["command"] = cmd
	}
	pod := map[string]any{
		"restartPolicy":     "Never",
		"priorityClassName": BatchPriority,
		// customer code: no API token unless a job's image asks the API
		// for something, which batch jobs here have no reason to
		"automountServiceAccountToken": false,
		"securityContext":              podSC,
		"volumes":                      []any{podsecurity.ScratchVolume("home", "16Gi"), podsecurity.ScratchVolume("tmp", "16Gi")},
		"tolerations":                  tolerations,
		"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
			"nodeSelectorTerms": []any{map[string]any{"matchExpressions": exprs}},
		}}},
		"containers": []any{container},
	}
	if runtimeClass != "" {
		pod["runtimeClassName"] = runtimeClass
	}
	return map[string]any{
		"apiVersion": "batch/v1",
		"kind":       "CronJob",
		"metadata":   map[string]any{"name": j.Name, "namespace": ns, "labels": map[string]any{"gpu-node-pools/batch": j.Name}},
		"spec": map[string]any{
			"schedule":                   j.Schedule,
			"timeZone":                   "Etc/UTC",
			"concurrencyPolicy":          "Forbid",
			"startingDeadlineSeconds":    600,
			"successfulJobsHistoryLimit": 3,
			"failedJobsHistoryLimit":     3,
			"jobTemplate": map[string]any{"spec": map[string]any{
				"activeDeadlineSeconds": deadline * 60,
				"backoffLimit":          1,
				"template":              map[string]any{"spec": pod},
			}},
		},
	}
}

// Env is the rclone configuration of the "src" remote the download Jobs
// read weights from, credentials as Pulumi secrets.
func (s *Storage) Env() pulumi.StringMap {
	if s.Kind == AzureBlob {
		env := pulumi.StringMap{
			"RCLONE_CONFIG_SRC_TYPE":    pulumi.String("azureblob"),
			"RCLONE_CONFIG_SRC_ACCOUNT": pulumi.String(s.Account),
		}
		if s.AccountKey != "" {
			env["RCLONE_CONFIG_SRC_KEY"] = s.AccountKey.Output()
		} else {
			env["RCLONE_CONFIG_SRC_ENV_AUTH"] = pulumi.String("true") // workload identity
		}
		return env
	}
	env := pulumi.StringMap{
		"RCLONE_CONFIG_SRC_TYPE":              pulumi.String("s3"),
		"RCLONE_CONFIG_SRC_PROVIDER":          pulumi.String("Other"),
		"RCLONE_CONFIG_SRC_ENDPOINT":          pulumi.String(s.Endpoint),
		"RCLONE_CONFIG_SRC_ACCESS_KEY_ID":     s.AccessKey.Output(),
		"RCLONE_CONFIG_SRC_SECRET_ACCESS_KEY": s.SecretKey.Output(),
	}
	if s.Region != "" {
		env["RCLONE_CONFIG_SRC_REGION"] = pulumi.String(s.Region)
	}
	return env
}

// modelClaim is a model's volume (vLLM's weights cache, Ollama's store).
// Binding may wait for the first consumer, so nothing awaits it. Its
// content comes from object storage or a registry, so no backup holds it
// (the backup's resource policy skips the volumes of its class); the claim
// itself is backed up, since a restore without it leaves every pod that
// mounts it Pending: restored, it binds a new, empty volume, which the
// restored download Job (Velero restores a Job without its status) fills.
func modelClaim(name, ns, accessMode, storageClass string, gi int) *corev1.PersistentVolumeClaimArgs {
	return &corev1.PersistentVolumeClaimArgs{
		Metadata: &metav1.ObjectMetaArgs{
			Name: pulumi.String(name), Namespace: pulumi.String(ns),
			Annotations: pulumi.StringMap{kube.SkipAwaitAnnotation: pulumi.String("true")},
		},
		Spec: &corev1.PersistentVolumeClaimSpecArgs{
			AccessModes:      pulumi.StringArray{pulumi.String(accessMode)},
			StorageClassName: pulumi.String(storageClass),
			Resources: &corev1.VolumeResourceRequirementsArgs{Requests: pulumi.StringMap{
				"storage": pulumi.String(fmt.Sprintf("%dGi", gi)),
			}},
		},
	}
}
