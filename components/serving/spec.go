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
	Name string `json:"name"`
	// Runtime is vllm (the default) or ollama (Runtimes).
	Runtime string `json:"runtime,omitempty"`
	// Pool is the GPU pool; an Ollama model without one runs on CPU
	// nodes: those NodeSelector picks, else any without the GPU label.
	Pool         string            `json:"pool"`
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Source is where the weights come from: the store's s3:// or az://
	// URL for vLLM, an Ollama registry reference (llama3.2:3b) for Ollama.
	Source string `json:"source"`
	// CatalogModel names a catalog model (models.Known): its size, shape and
	// native context. Without it, parametersB or weightsGB give the size
	// and shape the KV cache.
	CatalogModel string        `json:"model,omitempty"`
	ParametersB  float64       `json:"parametersB,omitempty"`
	WeightsGB    float64       `json:"weightsGB,omitempty"`
	Shape        *models.Shape `json:"shape,omitempty"`
	// Dtype is vLLM's --dtype (Dtypes); Quantization its --quantization
	// (Quantizations), empty for an unquantized model.
	Dtype                string  `json:"dtype,omitempty"`
	Quantization         string  `json:"quantization,omitempty"`
	TensorParallel       int     `json:"tensorParallel,omitempty"`
	MaxModelLen          int     `json:"maxModelLen,omitempty"`
	GPUMemoryUtilization float64 `json:"gpuMemoryUtilization,omitempty"`
	// Concurrency is how many sequences of maxModelLen tokens one replica
	// must hold at once (default 1).
	Concurrency int `json:"concurrency,omitempty"`
	// MinReplicas is nil for the default (1); 0 scales to zero.
	MinReplicas      *int   `json:"minReplicas,omitempty"`
	MaxReplicas      int    `json:"maxReplicas,omitempty"`
	QueueDepthTarget int    `json:"queueDepthTarget,omitempty"`
	Hostname         string `json:"hostname,omitempty"`
}

// Model are the model's fit facts.
func (m ModelSpec) Model() fit.Model {
	fit := fit.Model{
		Name: m.Name, ParametersB: m.ParametersB, WeightsGB: m.WeightsGB, Dtype: m.Dtype, Quantization: m.Quantization,
		TensorParallel: m.TensorParallel, GPUMemoryUtilization: m.GPUMemoryUtilization, MaxReplicas: m.MaxReplicas,
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
	Name     string   `json:"name"`
	Pool     string   `json:"pool"`
	Image    string   `json:"image"`
	Command  []string `json:"command,omitempty"`
	Schedule string   `json:"schedule"`
	GPUs     int      `json:"gpus"`
	// DeadlineMinutes bounds one run (default 240).
	DeadlineMinutes int `json:"deadlineMinutes,omitempty"`
	// Security is what the image needs beyond the restricted defaults.
	Security JobSecurity `json:"security,omitempty"`
}

// Storage is where weights live (gpu-node-pools:storage), with the
// credentials as secrets: they become Pulumi secrets in the component and
// nowhere else.
type Storage struct {
	Kind     string `json:"kind"` // s3 | azureBlob
	Endpoint string `json:"endpoint,omitempty"`
	Region   string `json:"region,omitempty"`
	Account  string `json:"account,omitempty"`
	// ClientID is the managed identity the download Jobs use through AKS
	// workload identity (azureBlob), instead of an account key.
	ClientID string `json:"clientId,omitempty"`
	// IdentityName and IdentityResourceGroup name that managed identity,
	// which the program federates with the download service account (the
	// resource group defaults to the cluster's).
	IdentityName          string        `json:"identityName,omitempty"`
	IdentityResourceGroup string        `json:"identityResourceGroup,omitempty"`
	AccessKey             secret.Secret `json:"accessKey,omitempty"`
	SecretKey             secret.Secret `json:"secretKey,omitempty"`
	AccountKey            secret.Secret `json:"accountKey,omitempty"`
}

// HasSecrets reports whether the block holds a secret value.
func (s *Storage) HasSecrets() bool {
	return s != nil && (s.AccessKey != "" || s.SecretKey != "" || s.AccountKey != "")
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
	Namespace string `json:"namespace,omitempty"`
	// BatchNamespace holds the batch CronJobs, apart from the model
	// servers: a job that needs root lowers only its own namespace.
	BatchNamespace    string  `json:"batchNamespace,omitempty"`
	StorageClass      string  `json:"storageClass,omitempty"`
	BandwidthMBps     float64 `json:"bandwidthMBps,omitempty"`
	PrometheusAddress string  `json:"prometheusAddress,omitempty"`
	// InstallKEDA is false when the cluster already runs KEDA.
	InstallKEDA *bool `json:"installKeda,omitempty"`
	// InstallCloudNativePG installs the operator the pgvector databases
	// need in CloudNativePGNamespace; by default the platform's operator
	// runs there (cnpg-system).
	InstallCloudNativePG   bool   `json:"installCloudNativePG,omitempty"`
	CloudNativePGNamespace string `json:"cloudNativePGNamespace,omitempty"`
	IngressNamespace       string `json:"ingressNamespace,omitempty"`
	IngressClass           string `json:"ingressClass,omitempty"`
	PrometheusNamespace    string `json:"prometheusNamespace,omitempty"`
	// ClientNamespaces may call the models' in-cluster endpoints (the
	// NetworkPolicy admits them besides ingress and Prometheus).
	ClientNamespaces []string `json:"clientNamespaces,omitempty"`
	ClusterIssuer    string   `json:"clusterIssuer,omitempty"`
	// NetworkPolicy is how the download Jobs' egress to the weights store
	// is expressed: cilium (a CiliumNetworkPolicy naming the store's
	// host) or cidr (a NetworkPolicy with DownloadCIDRs). The target
	// decides the default.
	NetworkPolicy string `json:"networkPolicy,omitempty"`
	// DownloadCIDRs are the address ranges of the weights store (and,
	// with workload identity, of Entra ID's login endpoint), for cidr.
	DownloadCIDRs []string `json:"downloadCIDRs,omitempty"`
	// OffPeakStartHour and OffPeakEndHour bound batch job start times (UTC).
	OffPeakStartHour *int   `json:"offPeakStartHour,omitempty"`
	OffPeakEndHour   *int   `json:"offPeakEndHour,omitempty"`
	Image            string `json:"image,omitempty"`
	// OllamaImage runs the Ollama models; ProxyImage the API-key proxy in
	// front of each (Caddy).
	OllamaImage string `json:"ollamaImage,omitempty"`
	ProxyImage  string `json:"proxyImage,omitempty"`
	// Charts overrides the vllm-stack and KEDA charts' versions and
	// repositories; defaulted, they are the pinned charts.
	Charts struct {
		VLLMStack helm.Chart `json:"vllmStack,omitempty"`
		KEDA      helm.Chart `json:"keda,omitempty"`
		HTTPAddOn helm.Chart `json:"httpAddOn,omitempty"`
		Ollama    helm.Chart `json:"ollama,omitempty"`
	} `json:"charts,omitempty"`
	// APIKey is the models' API key; empty generates one.
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
const DefaultImage = "vllm/vllm-openai:v0.11.0"

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
