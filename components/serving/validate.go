package serving

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/models"
	"github.com/natron/gpu-node-pools/internal/secret"
)

// Name limits: the chart names a model's Service vllm-<m>-<m>-engine-service
// (63 characters at most); a CronJob name has at most 52.
const (
	MaxModelName = 21
	MaxBatchName = 52
)

// Validate checks the storage block.
func (s *Storage) Validate(p *field.Path) field.ErrorList {
	if s == nil {
		return field.ErrorList{fielderr.Required(p, "required with models: where the weights live (kind s3 or azureBlob)")}
	}
	var errs field.ErrorList
	switch s.Kind {
	case S3:
		if !strings.HasPrefix(s.Endpoint, "https://") && !strings.HasPrefix(s.Endpoint, "http://") {
			errs = append(errs, fielderr.Invalid(p.Child("endpoint"), s.Endpoint, "must be the S3 endpoint URL (Ceph or any S3-compatible store)"))
		}
		// each missing key by its own name, with the command that sets it
		for _, k := range [][2]string{{"accessKey", string(s.AccessKey)}, {"secretKey", string(s.SecretKey)}} {
			if k[1] == "" {
				errs = append(errs, fielderr.Required(p.Child(k[0]), "required for s3, as a secret: pulumi config set --secret --path %s <value>", p.Child(k[0])))
			}
		}
	case AzureBlob:
		if !fielderr.DNSLabel(s.Account) {
			errs = append(errs, fielderr.Invalid(p.Child("account"), s.Account, "must be the storage account name"))
		}
		if s.AccountKey == "" && s.ClientID == "" {
			errs = append(errs, fielderr.Required(p.Child("accountKey"), "azureBlob needs an accountKey (a secret) or the clientId of a managed identity for workload identity"))
		}
	default:
		errs = append(errs, fielderr.NotSupported(p.Child("kind"), s.Kind, StorageKinds))
	}
	return errs
}

// Scheme is the source URL scheme of a storage kind's models ("": an
// unknown kind).
func Scheme(kind string) string {
	return map[string]string{S3: "s3://", AzureBlob: "az://"}[kind]
}

// Validate checks the serving options as written.
func (o Options) Validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if o.Namespace != "" && !fielderr.DNSLabel(o.Namespace) {
		errs = append(errs, fielderr.Invalid(p.Child("namespace"), o.Namespace, "must be a DNS label"))
	}
	if o.BandwidthMBps < 0 {
		errs = append(errs, fielderr.Invalid(p.Child("bandwidthMBps"), o.BandwidthMBps, "must be > 0 MB/s"))
	}
	if a := o.PrometheusAddress; a != "" && !strings.HasPrefix(a, "http://") && !strings.HasPrefix(a, "https://") {
		errs = append(errs, fielderr.Invalid(p.Child("prometheusAddress"), a, "must be an http(s) URL"))
	}
	hourOK := true
	for _, h := range []struct {
		key string
		v   *int
	}{{"offPeakStartHour", o.OffPeakStartHour}, {"offPeakEndHour", o.OffPeakEndHour}} {
		if h.v != nil && (*h.v < 0 || *h.v > 23) {
			errs = append(errs, fielderr.Invalid(p.Child(h.key), *h.v, "must be an hour 0-23 (UTC)"))
			hourOK = false
		}
	}
	if start, end := o.window(); hourOK && start == end {
		errs = append(errs, fielderr.Invalid(p.Child("offPeakEndHour"), end, "must differ from offPeakStartHour (%d)", start))
	}
	charts := p.Child("charts")
	errs = append(errs, o.Charts.VLLMStack.Validate(charts.Child("vllmStack"), VLLMStackChart.Version)...)
	errs = append(errs, o.Charts.KEDA.Validate(charts.Child("keda"), KEDAChart.Version)...)
	errs = append(errs, o.Charts.HTTPAddOn.Validate(charts.Child("httpAddOn"), HTTPAddOnChart.Version)...)
	errs = append(errs, o.Charts.Ollama.Validate(charts.Child("ollama"), OllamaChart.Version)...)
	if o.BatchNamespace != "" && (!fielderr.DNSLabel(o.BatchNamespace) || o.BatchNamespace == cmp.Or(o.Namespace, DefaultNamespace)) {
		errs = append(errs, fielderr.Invalid(p.Child("batchNamespace"), o.BatchNamespace, "must be a DNS label other than the models' namespace"))
	}
	if o.NetworkPolicy != "" && !slices.Contains(NetworkPolicies, o.NetworkPolicy) {
		errs = append(errs, fielderr.NotSupported(p.Child("networkPolicy"), o.NetworkPolicy, NetworkPolicies))
	}
	for i, c := range o.DownloadCIDRs {
		if _, _, err := net.ParseCIDR(c); err != nil {
			errs = append(errs, fielderr.Invalid(p.Child("downloadCIDRs").Index(i), c, "must be a CIDR such as 10.20.0.0/24"))
		}
	}
	for i, c := range o.ClientNamespaces {
		if !fielderr.DNSLabel(c) {
			errs = append(errs, fielderr.Invalid(p.Child("clientNamespaces").Index(i), c, "must be a namespace name (a DNS label)"))
		}
	}
	return append(errs, validKey(p.Child("apiKey"), o.APIKey)...)
}

// MinKeyLength is the shortest API key taken. The pod template of each
// proxy carries a hash of its keys in the clear (a changed key rolls the
// pods, and a render puts it in the GitOps repository): a key this long
// and random cannot be found from its hash.
const MinKeyLength = 32

// validKey checks a configured API key without showing it.
func validKey(p *field.Path, key secret.Secret) field.ErrorList {
	if key != "" && len(key) < MinKeyLength {
		return field.ErrorList{fielderr.Invalid(p, "(secret)",
			"must be at least %d characters, random (openssl rand -hex 24): its hash is in the pods' template in the clear", MinKeyLength)}
	}
	return nil
}

// SizeFields are the keys the fit check reads: it runs only when none of
// them was reported, so that one mistake gives one problem.
var SizeFields = []string{"model", "parametersB", "weightsGB", "shape", "dtype", "quantization", "tensorParallel",
	"maxModelLen", "concurrency", "gpuMemoryUtilization", "maxReplicas"}

// Validate checks a model as written; storageKind is the weights store's
// kind ("" when there is none). A key left out gets its default
// (WithDefaults); a key given must be valid.
func (m ModelSpec) Validate(p *field.Path, storageKind string) field.ErrorList {
	var errs field.ErrorList
	if !fielderr.DNSLabel(m.Name) || len(m.Name) > MaxModelName {
		errs = append(errs, fielderr.Invalid(p.Child("name"), m.Name, "must be a DNS label of at most %d characters", MaxModelName))
	}
	errs = append(errs, validKey(p.Child("apiKey"), m.APIKey)...)
	switch m.Runtime {
	case "", VLLM:
	case Ollama:
		return append(errs, m.validateOllama(p)...)
	default:
		return append(errs, fielderr.NotSupported(p.Child("runtime"), m.Runtime, Runtimes))
	}
	if len(m.NodeSelector) > 0 {
		errs = append(errs, fielderr.Forbidden(p.Child("nodeSelector"), m.NodeSelector, "is for runtime ollama on CPU nodes; a vLLM model runs on its pool"))
	}
	if want := Scheme(storageKind); want != "" && (!strings.HasPrefix(m.Source, want) || len(m.Source) <= len(want)) {
		errs = append(errs, fielderr.Invalid(p.Child("source"), m.Source, "must be a %s<bucket>/<path> URL of the %s store", want, storageKind))
	}
	errs = append(errs, m.validateSize(p)...)
	switch instead, legacy := fit.LegacyDtypes[m.Dtype]; {
	case legacy:
		errs = append(errs, fielderr.Invalid(p.Child("dtype"), m.Dtype, "is a quantization, not a vLLM --dtype (one of %s): write %s", strings.Join(fit.Dtypes, ", "), instead))
	case m.Dtype != "" && !slices.Contains(fit.Dtypes, m.Dtype):
		errs = append(errs, fielderr.NotSupported(p.Child("dtype"), m.Dtype, fit.Dtypes))
	}
	if _, known := fit.Quantizations[m.Quantization]; m.Quantization != "" && !known {
		errs = append(errs, fielderr.NotSupported(p.Child("quantization"), m.Quantization, fit.QuantizationNames()))
	} else if msg := fit.ActDtypeMisfit(m.Quantization, cmp.Or(m.Dtype, fit.DefaultDtype)); msg != "" && (m.Dtype == "" || slices.Contains(fit.Dtypes, m.Dtype)) {
		errs = append(errs, fielderr.Invalid(p.Child("dtype"), m.Dtype, "%s", msg))
	}
	if m.KVCacheDtype != "" && !slices.Contains(fit.KVCacheDtypes, m.KVCacheDtype) {
		errs = append(errs, fielderr.NotSupported(p.Child("kvCacheDtype"), m.KVCacheDtype, fit.KVCacheDtypes))
	}
	if m.TensorParallel < 0 {
		errs = append(errs, fielderr.Invalid(p.Child("tensorParallel"), m.TensorParallel, "must be >= 1 (or left out: the smallest that fits)"))
	}
	if m.MaxModelLen < 0 || m.MaxModelLen > 1<<20 {
		errs = append(errs, fielderr.Invalid(p.Child("maxModelLen"), m.MaxModelLen, "must be between 1 and %d tokens (or left out with model: the native context, capped by memory)", 1<<20))
	}
	if m.Concurrency < 0 {
		errs = append(errs, fielderr.Invalid(p.Child("concurrency"), m.Concurrency, "must be >= 1 sequence of maxModelLen tokens (or left out: 1)"))
	}
	if u := m.GPUMemoryUtilization; u < 0 || u > 0.98 {
		errs = append(errs, fielderr.Invalid(p.Child("gpuMemoryUtilization"), u, "must be above 0 and at most 0.98 (vLLM needs some headroom), or left out: %.1f", fit.DefaultUtilization))
	}
	if m.MinReplicas != nil && *m.MinReplicas < 0 {
		errs = append(errs, fielderr.Invalid(p.Child("minReplicas"), *m.MinReplicas, "must be >= 0 (0 scales to zero)"))
	}
	if m.MaxReplicas < 0 || (m.MaxReplicas > 0 && m.MaxReplicas < m.Replicas()) {
		errs = append(errs, fielderr.Invalid(p.Child("maxReplicas"), m.MaxReplicas, "must be >= 1 and >= minReplicas (%d), or left out: what the pool holds", m.Replicas()))
	}
	if m.QueueDepthTarget < 0 {
		errs = append(errs, fielderr.Invalid(p.Child("queueDepthTarget"), m.QueueDepthTarget, "must be >= 1 waiting request per replica (or left out: %d)", DefaultQueueDepthTarget))
	}
	errs = append(errs, m.validateWeights(p)...)
	return append(errs, m.validateHostname(p)...)
}

var (
	sha256Re = regexp.MustCompile(`^[0-9a-f]{64}$`)
	// a file name the download's shell takes as it is
	fileNameRe = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)
)

// validateWeights: a pinned manifest is a file beside the weights, named
// by its SHA-256; code from the store runs only when the model trusts it
// on purpose, and then only code the manifest pins.
func (m ModelSpec) validateWeights(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c := m.Checksums; c != nil {
		cp := p.Child("checksums")
		if !sha256Re.MatchString(c.SHA256) {
			errs = append(errs, fielderr.Invalid(cp.Child("sha256"), c.SHA256, "must be the manifest's SHA-256, 64 lowercase hex digits (sha256sum %s)", c.ManifestName()))
		}
		if n := c.Manifest; n != "" && (!fileNameRe.MatchString(n) || strings.Trim(n, ".") == "") {
			errs = append(errs, fielderr.Invalid(cp.Child("manifest"), n, "must be a file name beside the weights, such as %s", DefaultManifest))
		}
	}
	if m.TrustRemoteCode && m.Checksums == nil {
		errs = append(errs, fielderr.Required(p.Child("checksums"), "required with trustRemoteCode: the model's Python code runs beside the GPUs, so the manifest must pin it (checksums.sha256)"))
	}
	return errs
}

// validateHostname: a public name the API server accepts as an Ingress
// host.
func (m ModelSpec) validateHostname(p *field.Path) field.ErrorList {
	if h := m.Hostname; h != "" && (!fielderr.DNSSubdomain(h) || !strings.Contains(h, ".")) {
		return field.ErrorList{fielderr.Invalid(p.Child("hostname"), h, "must be a DNS name such as llama.acme.example")}
	}
	return nil
}

// Validate checks a batch job as written; o are the options with their
// off-peak window.
func (j BatchJobSpec) Validate(p *field.Path, o Options) field.ErrorList {
	var errs field.ErrorList
	if !fielderr.DNSLabel(j.Name) || len(j.Name) > MaxBatchName {
		errs = append(errs, fielderr.Invalid(p.Child("name"), j.Name, "must be a DNS label of at most %d characters", MaxBatchName))
	}
	if strings.TrimSpace(j.Image) == "" {
		errs = append(errs, fielderr.Invalid(p.Child("image"), j.Image, "required: the job's container image"))
	}
	if j.GPUs < 1 {
		errs = append(errs, fielderr.Invalid(p.Child("gpus"), j.GPUs, "must be at least 1"))
	}
	if j.DeadlineMinutes < 0 || j.DeadlineMinutes > 24*60 {
		errs = append(errs, fielderr.Invalid(p.Child("deadlineMinutes"), j.DeadlineMinutes, "must be between 1 and 1440 (0: 240)"))
	}
	if msg := offPeakSchedule(j.Schedule, o); msg != "" {
		errs = append(errs, fielderr.Invalid(p.Child("schedule"), j.Schedule, "%s", msg))
	}
	for i, c := range j.Security.Capabilities {
		if !capabilityRe.MatchString(c) || strings.HasPrefix(c, "CAP_") {
			errs = append(errs, fielderr.Invalid(p.Child("security", "capabilities").Index(i), c, "must be a capability name such as NET_BIND_SERVICE (no CAP_ prefix)"))
		}
	}
	for _, id := range []struct {
		key string
		v   *int64
	}{{"runAsUser", j.Security.RunAsUser}, {"runAsGroup", j.Security.RunAsGroup}} {
		if id.v != nil && (*id.v < 0 || *id.v > math.MaxInt32) {
			errs = append(errs, fielderr.Invalid(p.Child("security", id.key), *id.v, "must be a user or group ID, 0-2147483647"))
		}
	}
	return errs
}

var capabilityRe = regexp.MustCompile(`^[A-Z][A-Z_]*$`)

var cronFieldRe = []*regexp.Regexp{
	regexp.MustCompile(`^(\*|[0-9,\-/*]+)$`), // minute
	regexp.MustCompile(`^[0-9,\-]+$`),        // hour: explicit hours only
	regexp.MustCompile(`^(\*|[0-9,\-/*]+)$`), // day of month
	regexp.MustCompile(`^(\*|[0-9,\-/*]+)$`), // month
	regexp.MustCompile(`^(\*|[0-9,\-/*]+)$`), // day of week
}

// offPeakSchedule checks a five-field cron schedule whose hours all fall in
// the off-peak window; it returns what is wrong, or "".
func offPeakSchedule(s string, o Options) string {
	start, end := o.window()
	window := fmt.Sprintf("off-peak hours %02d:00-%02d:00 UTC", start, end)
	fields := strings.Fields(s)
	if len(fields) != 5 {
		return "must be a five-field cron schedule (minute hour day month weekday)"
	}
	for i, f := range fields {
		if !cronFieldRe[i].MatchString(f) {
			if i == 1 {
				return "must name its hours explicitly (such as 2 or 1-3), all within the " + window
			}
			return fmt.Sprintf("field %d (%s) is not a cron field", i+1, f)
		}
	}
	var hours []int
	for _, part := range strings.Split(fields[1], ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b > 23 || a > b {
			return "has an invalid hour " + part
		}
		for h := a; h <= b; h++ {
			hours = append(hours, h)
		}
	}
	if slices.ContainsFunc(hours, func(h int) bool { return !o.InOffPeak(h) }) {
		return "must run within the " + window + " so that batch work does not compete with serving"
	}
	return ""
}

// validateSize: a catalog model gives the size and shape; otherwise the
// config gives the size (parametersB or weightsGB) and the context, and
// may give the shape.
func (m ModelSpec) validateSize(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m.CatalogModel != "" {
		if _, ok := models.Known.Lookup(m.CatalogModel); !ok {
			return append(errs, fielderr.NotSupported(p.Child("model"), m.CatalogModel, models.Known.Names()))
		}
		for _, k := range []struct {
			key   string
			set   bool
			value any
		}{{"parametersB", m.ParametersB != 0, m.ParametersB}, {"weightsGB", m.WeightsGB != 0, m.WeightsGB}, {"shape", m.Shape != nil, m.Shape}} {
			if k.set {
				errs = append(errs, fielderr.Forbidden(p.Child(k.key), k.value, "the catalog model "+m.CatalogModel+" gives it: leave it out, or drop model"))
			}
		}
		return errs
	}
	switch {
	case m.ParametersB > 0 && m.WeightsGB > 0:
		errs = append(errs, fielderr.Invalid(p.Child("weightsGB"), m.WeightsGB, "set parametersB or weightsGB, not both"))
	case m.ParametersB <= 0 && m.WeightsGB <= 0:
		errs = append(errs, fielderr.Invalid(p.Child("parametersB"), m.ParametersB,
			"required: billions of parameters (or weightsGB instead), unless model names a catalog model (%s)", strings.Join(models.Known.Names(), ", ")))
	}
	if m.MaxModelLen == 0 {
		errs = append(errs, fielderr.Required(p.Child("maxModelLen"), "required without model: no catalog entry gives the native context"))
	}
	if s := m.Shape; s != nil {
		sp := p.Child("shape")
		if s.Attention != "" && !slices.Contains(models.Attentions, s.Attention) {
			errs = append(errs, fielderr.NotSupported(sp.Child("attention"), s.Attention, models.Attentions))
		}
		// attentionHeads (for the tensor-parallel check) and hiddenSize (for
		// the activations) are optional; the KV cache's fields are not
		if s.AttentionHeads < 0 || s.HiddenSize < 0 {
			errs = append(errs, fielderr.Invalid(sp, *s, "attentionHeads and hiddenSize must be > 0 when given"))
		}
		positive := map[string]int{"layers": s.Layers}
		if s.Kind() == models.MLA {
			positive["kvLoraRank"], positive["ropeHeadDim"] = s.KVLoraRank, s.RopeHeadDim
		} else {
			positive["kvHeads"], positive["headDim"] = s.KVHeads, s.HeadDim
		}
		for _, k := range slices.Sorted(maps.Keys(positive)) {
			if positive[k] <= 0 {
				errs = append(errs, fielderr.Invalid(sp.Child(k), positive[k], "must be > 0: the field of the model's config.json"))
			}
		}
	}
	return errs
}
