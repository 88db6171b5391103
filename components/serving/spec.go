package serving

// ModelSpec is one model as written in config (gpu-node-pools:models[i]).
type ModelSpec struct {
	Name                 string  `json:"name"`
	Pool                 string  `json:"pool"`
	Source               string  `json:"source"`
	ParametersB          float64 `json:"parametersB,omitempty"`
	WeightsGB            float64 `json:"weightsGB,omitempty"`
	Dtype                string  `json:"dtype"`
	TensorParallel       int     `json:"tensorParallel"`
	MaxModelLen          int     `json:"maxModelLen"`
	GPUMemoryUtilization float64 `json:"gpuMemoryUtilization"`
	MinReplicas          int     `json:"minReplicas"`
	MaxReplicas          int     `json:"maxReplicas"`
	QueueDepthTarget     int     `json:"queueDepthTarget"`
	Hostname             string  `json:"hostname,omitempty"`
}

// Fit facts of the model.
func (m ModelSpec) Model() Model {
	return Model{
		Name: m.Name, ParametersB: m.ParametersB, WeightsGB: m.WeightsGB, Dtype: m.Dtype,
		TensorParallel: m.TensorParallel, GPUMemoryUtilization: m.GPUMemoryUtilization, MaxReplicas: m.MaxReplicas,
	}
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
}

// StorageSpec is where weights live (gpu-node-pools:storage). Credentials
// are secrets and reach the program as Pulumi secrets, not here.
type StorageSpec struct {
	Kind     string `json:"kind"` // s3 | azureBlob
	Endpoint string `json:"endpoint,omitempty"`
	Region   string `json:"region,omitempty"`
	Account  string `json:"account,omitempty"`
	// ClientID is the managed identity the download Jobs use through AKS
	// workload identity (azureBlob), instead of an account key.
	ClientID string `json:"clientId,omitempty"`
}

// Storage kinds.
const (
	S3        = "s3"
	AzureBlob = "azureBlob"
)

// Options are the serving settings (gpu-node-pools:serving), all optional.
type Options struct {
	Namespace         string  `json:"namespace,omitempty"`
	StorageClass      string  `json:"storageClass,omitempty"`
	BandwidthMBps     float64 `json:"bandwidthMBps,omitempty"`
	PrometheusAddress string  `json:"prometheusAddress,omitempty"`
	// InstallKEDA is false when the cluster already runs KEDA.
	InstallKEDA         *bool  `json:"installKeda,omitempty"`
	IngressNamespace    string `json:"ingressNamespace,omitempty"`
	IngressClass        string `json:"ingressClass,omitempty"`
	PrometheusNamespace string `json:"prometheusNamespace,omitempty"`
	ClusterIssuer       string `json:"clusterIssuer,omitempty"`
	// OffPeakStartHour and OffPeakEndHour bound batch job start times (UTC).
	OffPeakStartHour *int   `json:"offPeakStartHour,omitempty"`
	OffPeakEndHour   *int   `json:"offPeakEndHour,omitempty"`
	Image            string `json:"image,omitempty"`
	// Charts pins the vllm-stack and KEDA charts' versions and repositories.
	Charts struct {
		VLLMStack ChartOverride `json:"vllmStack,omitempty"`
		KEDA      ChartOverride `json:"keda,omitempty"`
	} `json:"charts,omitempty"`
}

// ChartOverride replaces a pinned chart's version or repository.
type ChartOverride struct {
	Version string `json:"version,omitempty"`
	Repo    string `json:"repo,omitempty"`
}

// Chart applies an override to a pinned chart.
func (c ChartOverride) Chart(pinned Chart) Chart {
	if c.Version != "" {
		pinned.Version = c.Version
	}
	if c.Repo != "" {
		pinned.Repo = c.Repo
	}
	return pinned
}

// Defaults fills unset options; onAKS picks the storage class.
func (o Options) Defaults(onAKS bool) Options {
	or := func(v, d string) string {
		if v == "" {
			return d
		}
		return v
	}
	o.Namespace = or(o.Namespace, "models")
	if onAKS {
		o.StorageClass = or(o.StorageClass, "azurefile-csi-premium")
	} else {
		o.StorageClass = or(o.StorageClass, "cephfs")
	}
	if o.BandwidthMBps == 0 {
		o.BandwidthMBps = 200
	}
	o.PrometheusAddress = or(o.PrometheusAddress, "http://prometheus-operated.monitoring.svc:9090")
	if o.InstallKEDA == nil {
		t := true
		o.InstallKEDA = &t
	}
	o.IngressNamespace = or(o.IngressNamespace, "ingress-nginx")
	o.IngressClass = or(o.IngressClass, "nginx")
	o.PrometheusNamespace = or(o.PrometheusNamespace, "monitoring")
	o.ClusterIssuer = or(o.ClusterIssuer, "letsencrypt-prod")
	if o.OffPeakStartHour == nil {
		h := 22
		o.OffPeakStartHour = &h
	}
	if o.OffPeakEndHour == nil {
		h := 6
		o.OffPeakEndHour = &h
	}
	o.Image = or(o.Image, "vllm/vllm-openai:v0.11.0")
	return o
}

// InOffPeak reports whether hour h (0-23) is in the window [start, end),
// which may wrap midnight.
func (o Options) InOffPeak(h int) bool {
	s, e := *o.OffPeakStartHour, *o.OffPeakEndHour
	if s <= e {
		return h >= s && h < e
	}
	return h >= s || h < e
}
