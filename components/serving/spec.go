package serving

import (
	"cmp"

	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/models"
	"github.com/natron/gpu-node-pools/internal/secret"
)

// ModelSpec is one model as written in config (gpu-node-pools:models[i]).
// Only name, pool and source are required when model names a catalog
// entry: WithDefaults decides the rest.
type ModelSpec struct {
	// Name is a DNS label of at most 21 characters, unique; also the id
	// clients send ("model": "llama3-8b").
	Name string `json:"name"`
	// Runtime is vllm, or ollama for small quantized models.
	// Default: vllm.
	Runtime string `json:"runtime,omitempty"`
	// Pool is the GPU pool the model runs on (required with vllm); an ollama
	// model without one runs on CPU nodes.
	Pool string `json:"pool"`
	// NodeSelector picks the CPU nodes of an ollama model without a pool; a
	// GPU pool's selector is refused.
	// Default: any node without nvidia.com/gpu.present=true.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Source is where the weights come from: s3://bucket/path or
	// az://container/path, per storage.kind; for ollama an Ollama registry
	// name such as llama3.2:3b.
	Source string `json:"source"`
	// CatalogModel names a catalog model (docs/sizing.md): its size, KV
	// shape, native context and checkpoint quantization.
	CatalogModel string `json:"model,omitempty"`
	// ParametersB is the model's size in billions of parameters, without
	// model (or weightsGB).
	ParametersB float64 `json:"parametersB,omitempty"`
	// WeightsGB is the weights' size in GB, without model (or parametersB).
	WeightsGB float64 `json:"weightsGB,omitempty"`
	// Shape is the model's attention shape from its config.json, for an
	// exact KV cache without model.
	Shape *models.Shape `json:"shape,omitempty"`
	// Dtype is vLLM's --dtype: auto, half, float16, bfloat16, float or
	// float32.
	// Default: auto.
	Dtype string `json:"dtype,omitempty"`
	// Quantization is the checkpoint's quantization: fp8, awq, gptq,
	// compressed-tensors or bitsandbytes; empty for an unquantized model.
	// It sizes memory; vLLM reads the method from the checkpoint and picks
	// its kernel (Marlin for awq and gptq where the checkpoint and GPU
	// allow, compute capability 8.0 and up). Only fp8 and bitsandbytes,
	// which can quantize a 16-bit checkpoint as it loads, are passed to
	// vLLM as --quantization.
	// Default: the catalog model's (DeepSeek V3: fp8).
	Quantization string `json:"quantization,omitempty"`
	// KVCacheDtype is vLLM's --kv-cache-dtype: auto (the dtype's width) or
	// fp8, which halves the KV cache of a 16-bit model and the bytes each
	// decode step reads of it; fp8 needs an FP8 GPU (H100, H200).
	// Default: auto.
	KVCacheDtype string `json:"kvCacheDtype,omitempty"`
	// TensorParallel is the GPUs per replica; it divides a node's GPUs and
	// the model's attention heads, and is 1 on MIG and time-sliced pools.
	// Default: the smallest that fits.
	TensorParallel int `json:"tensorParallel,omitempty"`
	// MaxModelLen is vLLM's --max-model-len, required without model.
	// Default: the native context, capped by memory (multiples of 1024).
	MaxModelLen int `json:"maxModelLen,omitempty"`
	// GPUMemoryUtilization is vLLM's fraction of GPU memory, in (0, 0.98].
	// Default: 0.9.
	GPUMemoryUtilization float64 `json:"gpuMemoryUtilization,omitempty"`
	// Concurrency is how many sequences of maxModelLen tokens one replica's
	// KV cache must hold at once.
	// Default: 1.
	Concurrency int `json:"concurrency,omitempty"`
	// MinReplicas is the lower scaling bound; 0 scales to zero and wakes on
	// the first request.
	// Default: 1.
	MinReplicas *int `json:"minReplicas,omitempty"`
	// MaxReplicas is the upper scaling bound.
	// Default: what the pool holds (maxNodes x GPUs per node /
	// tensorParallel).
	MaxReplicas int `json:"maxReplicas,omitempty"`
	// QueueDepthTarget is the waiting requests per replica before scaling
	// out.
	// Default: 5.
	QueueDepthTarget int `json:"queueDepthTarget,omitempty"`
	// Hostname is a public endpoint with TLS (cert-manager).
	Hostname string `json:"hostname,omitempty"`
	// Checksums pin the weights: the download verifies every file against
	// a SHA256SUMS manifest beside them, whose own SHA-256 the stack file
	// names, before the engines may load them.
	Checksums *Checksums `json:"checksums,omitempty"`
	// TrustRemoteCode lets the model's directory hold Python files that
	// vLLM runs (--trust-remote-code): the download refuses a source with
	// any unless this is set, and needs checksums with it.
	// Default: false.
	TrustRemoteCode bool `json:"trustRemoteCode,omitempty"`
	// APIKey is this model's own API key, a secret of at least 32 random
	// characters: its clients hold a key no other model accepts. A changed
	// key rolls the model's pods.
	// Default: serving.apiKey.
	APIKey secret.Secret `json:"apiKey,omitempty"`
}

// Checksums name a model's checksum manifest and pin it
// (gpu-node-pools:models[i].checksums).
type Checksums struct {
	// Manifest is the file beside the weights that lists each file's
	// SHA-256, as sha256sum writes it ("<hex>  <name>" lines).
	// Default: SHA256SUMS.
	Manifest string `json:"manifest,omitempty"`
	// SHA256 is the manifest's own SHA-256, 64 hex digits: whoever can
	// write the store cannot change the files without changing it.
	SHA256 string `json:"sha256"`
}

// DefaultManifest is the checksum manifest's name unless checksums says.
const DefaultManifest = "SHA256SUMS"

// ManifestName is the manifest's file name.
func (c Checksums) ManifestName() string { return cmp.Or(c.Manifest, DefaultManifest) }

// KeyField is the field of the API-key Secret holding the model's key:
// its own, or the stack's shared one.
func (m ModelSpec) KeyField() string {
	if m.APIKey != "" {
		return APIKeyField + "-" + m.Name
	}
	return APIKeyField
}

// Model are the model's fit facts.
func (m ModelSpec) Model() fit.Model {
	fit := fit.Model{
		Name: m.Name, ParametersB: m.ParametersB, WeightsGB: m.WeightsGB, Dtype: m.Dtype, Quantization: m.Quantization,
		KVCacheDtype: m.KVCacheDtype, TensorParallel: m.TensorParallel, GPUMemoryUtilization: m.GPUMemoryUtilization, MaxReplicas: m.MaxReplicas,
		MaxModelLen: m.MaxModelLen, Concurrency: m.Concurrency,
	}
	if m.Shape != nil {
		fit.Shape = *m.Shape
	}
	return fit
}

// Replicas is the lower scaling bound (0 scales to zero).
func (m ModelSpec) Replicas() int {
	if m.MinReplicas == nil {
		return DefaultMinReplicas
	}
	return *m.MinReplicas
}

// BatchJobSpec is one off-peak batch job (gpu-node-pools:batchJobs[i]).
type BatchJobSpec struct {
	// Name is a DNS label of at most 52 characters, unique.
	Name string `json:"name"`
	// Pool is the GPU pool the job runs on.
	Pool string `json:"pool"`
	// Image is the job's container image.
	Image string `json:"image"`
	// Command is the container command.
	// Default: the image's.
	Command []string `json:"command,omitempty"`
	// Schedule is a five-field cron schedule with its hours named
	// explicitly, all in the off-peak window.
	Schedule string `json:"schedule"`
	// GPUs is how many GPUs one run takes, at most one node's.
	GPUs int `json:"gpus"`
	// DeadlineMinutes bounds one run, 1 to 1440.
	// Default: 240.
	DeadlineMinutes int `json:"deadlineMinutes,omitempty"`
	// Security is what the image needs beyond Pod Security restricted,
	// checked against the batch namespace's level.
	Security JobSecurity `json:"security,omitempty"`
}

// Storage is where weights live (gpu-node-pools:storage), with the
// credentials as secrets: they become Pulumi secrets in the component and
// nowhere else.
type Storage struct {
	// Kind is s3 (Ceph or any S3-compatible store) or azureBlob.
	Kind string `json:"kind"`
	// Endpoint is the S3 endpoint URL (required with s3).
	Endpoint string `json:"endpoint,omitempty"`
	// Region is the S3 region.
	Region string `json:"region,omitempty"`
	// Account is the storage account name (required with azureBlob).
	Account string `json:"account,omitempty"`
	// ClientID is the client ID of a managed identity the download Jobs use
	// through the target's workload identity (azureBlob), instead of
	// accountKey: give it read access to the weights alone (Storage Blob
	// Data Reader).
	ClientID string `json:"clientId,omitempty"`
	// IdentityName is that managed identity's name, which the program
	// federates with the download service account.
	IdentityName string `json:"identityName,omitempty"`
	// IdentityResourceGroup is the managed identity's resource group.
	// Default: the cluster's.
	IdentityResourceGroup string `json:"identityResourceGroup,omitempty"`
	// AccessKey is the S3 access key the weights are read with, a secret
	// (required with s3): give it read access to the weights alone.
	AccessKey secret.Secret `json:"accessKey,omitempty"`
	// SecretKey is the S3 secret key, a secret (required with s3).
	SecretKey secret.Secret `json:"secretKey,omitempty"`
	// AccountKey is the storage account key, a secret (azureBlob, unless
	// clientId).
	AccountKey secret.Secret `json:"accountKey,omitempty"`
	// BackupAccessKey is the S3 access key the pgvector backups write
	// with, a secret (s3, required with a pgvector backup): the weights'
	// keys only read, so they differ.
	BackupAccessKey secret.Secret `json:"backupAccessKey,omitempty"`
	// BackupSecretKey is that key's secret, a secret.
	BackupSecretKey secret.Secret `json:"backupSecretKey,omitempty"`
	// BackupClientID is the client ID of the managed identity the pgvector
	// backups write with through workload identity (azureBlob, required
	// with a pgvector backup), another than clientId's.
	BackupClientID string `json:"backupClientId,omitempty"`
	// BackupIdentityName is that identity's name, which the program
	// federates with the backed-up databases' service accounts.
	BackupIdentityName string `json:"backupIdentityName,omitempty"`
	// BackupIdentityResourceGroup is its resource group.
	// Default: the cluster's.
	BackupIdentityResourceGroup string `json:"backupIdentityResourceGroup,omitempty"`
}

// HasSecrets reports whether the block holds a secret value.
func (s *Storage) HasSecrets() bool {
	return s != nil && (s.AccessKey != "" || s.SecretKey != "" || s.AccountKey != "" || s.BackupAccessKey != "" || s.BackupSecretKey != "")
}

// Storage kinds.
const (
	S3        = "s3"
	AzureBlob = "azureBlob"
)

// StorageKinds lists the kinds.
var StorageKinds = []string{S3, AzureBlob}

// Options are the serving settings (gpu-node-pools:serving), all optional.
type Options struct {
	// Namespace holds the model servers.
	// Default: models.
	Namespace string `json:"namespace,omitempty"`
	// BatchNamespace holds the batch CronJobs, apart from the model servers:
	// a job that needs root lowers only its own namespace.
	// Default: batch.
	BatchNamespace string `json:"batchNamespace,omitempty"`
	// StorageClass is the ReadWriteMany class of the weights caches.
	// Default: the target's (azurefile-csi-premium on aks, cephfs on
	// natron).
	StorageClass string `json:"storageClass,omitempty"`
	// BandwidthMBps is the cache read bandwidth, for the startup budget.
	// Default: 200.
	BandwidthMBps float64 `json:"bandwidthMBps,omitempty"`
	// PrometheusAddress is where KEDA reads queue depth.
	// Default: http://prometheus-operated.monitoring.svc:9090.
	PrometheusAddress string `json:"prometheusAddress,omitempty"`
	// InstallKEDA installs KEDA (and its HTTP add-on for scale-from-zero
	// models); false when the cluster already runs KEDA.
	// Default: true.
	InstallKEDA *bool `json:"installKeda,omitempty"`
	// InstallCloudNativePG installs the CloudNativePG operator the pgvector
	// databases need; rendering stacks bring it through their pipeline.
	// Default: false.
	InstallCloudNativePG bool `json:"installCloudNativePG,omitempty"`
	// CloudNativePGNamespace is where that operator runs (its own or the
	// platform's); the databases admit it.
	// Default: cnpg-system.
	CloudNativePGNamespace string `json:"cloudNativePGNamespace,omitempty"`
	// IngressNamespace is the ingress controller's namespace.
	// Default: ingress-nginx.
	IngressNamespace string `json:"ingressNamespace,omitempty"`
	// IngressClass is the ingress controller's class.
	// Default: nginx.
	IngressClass string `json:"ingressClass,omitempty"`
	// PrometheusNamespace may scrape the engines.
	// Default: monitoring.
	PrometheusNamespace string `json:"prometheusNamespace,omitempty"`
	// ClientNamespaces may call the models' in-cluster endpoints (the
	// NetworkPolicy admits them besides ingress and Prometheus).
	ClientNamespaces []string `json:"clientNamespaces,omitempty"`
	// ClusterIssuer is the cert-manager ClusterIssuer of public endpoints.
	// Default: letsencrypt-prod.
	ClusterIssuer string `json:"clusterIssuer,omitempty"`
	// NetworkPolicy is how the download Jobs' egress to the weights store is
	// expressed: cilium (a CiliumNetworkPolicy naming the store's host) or
	// cidr (a NetworkPolicy with downloadCIDRs).
	// Default: the target's (cidr on aks, cilium on natron).
	NetworkPolicy string `json:"networkPolicy,omitempty"`
	// DownloadCIDRs are the address ranges of the weights store (and, with
	// workload identity, of the identity provider's login endpoint);
	// required with cidr.
	DownloadCIDRs []string `json:"downloadCIDRs,omitempty"`
	// OffPeakStartHour starts the batch window (UTC hour).
	// Default: 22.
	OffPeakStartHour *int `json:"offPeakStartHour,omitempty"`
	// OffPeakEndHour ends the batch window (UTC hour).
	// Default: 6.
	OffPeakEndHour *int `json:"offPeakEndHour,omitempty"`
	// Image is the vLLM image, by an exact version (or a digest).
	// Default: vllm/vllm-openai:v0.14.1, by its published digest.
	Image string `json:"image,omitempty"`
	// OllamaImage runs the Ollama models, by an exact version (or a
	// digest).
	// Default: ollama/ollama:0.32.15, by its published digest.
	OllamaImage string `json:"ollamaImage,omitempty"`
	// ProxyImage is the API-key proxy in front of every model and the
	// gateway of those that scale from zero (Caddy), by an exact version
	// (or a digest).
	// Default: caddy:2.11.9-alpine.
	ProxyImage string `json:"proxyImage,omitempty"`
	// RcloneImage and WaitImage are the weight download's and the wait
	// containers' images: the program's, pinned with the others.
	RcloneImage string `json:"-"`
	WaitImage   string `json:"-"`
	// Charts overrides the vllm-stack and KEDA charts' versions and
	// repositories; defaulted, they are the pinned charts.
	Charts struct {
		VLLMStack helm.Chart `json:"vllmStack,omitempty"`
		KEDA      helm.Chart `json:"keda,omitempty"`
		HTTPAddOn helm.Chart `json:"httpAddOn,omitempty"`
		Ollama    helm.Chart `json:"ollama,omitempty"`
	} `json:"charts,omitempty"`
	// APIKey is the models' API key, a secret of at least 32 random
	// characters (openssl rand -hex 24).
	// Default: generated (needs the random plugin).
	APIKey secret.Secret `json:"apiKey,omitempty"`
}

// Pinned charts. The vllm-stack chart runs the images the program sets
// (Image, WaitImage); KEDA's run in their own namespace.
var (
	VLLMStackChart = helm.Chart{Name: "vllm-stack", Version: "0.1.12", Repo: "https://vllm-project.github.io/production-stack"}
	KEDAChart      = helm.Chart{Name: "keda", Version: "2.20.2", Repo: "https://kedacore.github.io/charts",
		Images: []string{"ghcr.io/kedacore/keda", "ghcr.io/kedacore/keda-metrics-apiserver", "ghcr.io/kedacore/keda-admission-webhooks"}}
)

// DefaultImage is the vLLM image.
// v0.14.1 is the first release outside CVE-2026-22778 (multimodal code
// execution, 0.8.3-0.14.0) with the fix for CVE-2026-22807 (Python files
// in the model directory loaded through auto_map without
// --trust-remote-code).
const DefaultImage = "vllm/vllm-openai:v0.14.1"

// OllamaChart is the official Ollama chart; DefaultOllamaImage its app
// version. DefaultProxyImage is the Caddy release whose Go module the
// proxy's tests run (github.com/caddyserver/caddy/v2).
var OllamaChart = helm.Chart{Name: "ollama", Version: "1.77.0", Repo: "https://helm.otwld.com/"}

const (
	DefaultOllamaImage = "ollama/ollama:0.32.15"
	DefaultProxyImage  = "caddy:2.11.9-alpine"
)

// DefaultNamespace holds the models unless serving.namespace says.
const DefaultNamespace = "models"

// NetworkPolicy modes.
const (
	Cilium = "cilium"
	CIDR   = "cidr"
)

// NetworkPolicies lists the modes.
var NetworkPolicies = []string{Cilium, CIDR}

// Defaults fills unset options; storageClass is the target's RWX class,
// networkPolicy its way of expressing egress.
func (o Options) Defaults(storageClass, networkPolicy string) Options {
	o.Namespace = cmp.Or(o.Namespace, DefaultNamespace)
	o.BatchNamespace = cmp.Or(o.BatchNamespace, "batch")
	o.NetworkPolicy = cmp.Or(o.NetworkPolicy, networkPolicy)
	o.StorageClass = cmp.Or(o.StorageClass, storageClass)
	o.BandwidthMBps = cmp.Or(o.BandwidthMBps, 200)
	o.PrometheusAddress = cmp.Or(o.PrometheusAddress, "http://prometheus-operated.monitoring.svc:9090")
	if o.InstallKEDA == nil {
		t := true
		o.InstallKEDA = &t
	}
	o.IngressNamespace = cmp.Or(o.IngressNamespace, "ingress-nginx")
	o.IngressClass = cmp.Or(o.IngressClass, "nginx")
	o.PrometheusNamespace = cmp.Or(o.PrometheusNamespace, "monitoring")
	o.CloudNativePGNamespace = cmp.Or(o.CloudNativePGNamespace, "cnpg-system")
	o.ClusterIssuer = cmp.Or(o.ClusterIssuer, "letsencrypt-prod")
	start, end := o.window()
	o.OffPeakStartHour, o.OffPeakEndHour = &start, &end
	o.Image = cmp.Or(o.Image, DefaultImage)
	o.OllamaImage = cmp.Or(o.OllamaImage, DefaultOllamaImage)
	o.ProxyImage = cmp.Or(o.ProxyImage, DefaultProxyImage)
	o.RcloneImage = cmp.Or(o.RcloneImage, RcloneImage)
	o.WaitImage = cmp.Or(o.WaitImage, WaitImage)
	o.Charts.Ollama = OllamaChart.With(o.Charts.Ollama)
	o.Charts.VLLMStack = VLLMStackChart.With(o.Charts.VLLMStack)
	o.Charts.KEDA = KEDAChart.With(o.Charts.KEDA)
	o.Charts.HTTPAddOn = HTTPAddOnChart.With(o.Charts.HTTPAddOn)
	return o
}

// window is the off-peak window, 22:00-06:00 UTC unless configured.
func (o Options) window() (start, end int) {
	start, end = 22, 6
	if o.OffPeakStartHour != nil {
		start = *o.OffPeakStartHour
	}
	if o.OffPeakEndHour != nil {
		end = *o.OffPeakEndHour
	}
	return start, end
}

// InOffPeak reports whether hour h (0-23) is in the window [start, end),
// which may wrap midnight.
func (o Options) InOffPeak(h int) bool {
	s, e := o.window()
	if s <= e {
		return h >= s && h < e
	}
	return h >= s || h < e
}
