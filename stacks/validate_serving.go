package stacks

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/natron/gpu-node-pools/components/catalog"
	"github.com/natron/gpu-node-pools/components/gpupool"
	"github.com/natron/gpu-node-pools/components/serving"
)

var hostnameRe = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$`)

// Name limits: the chart names a model's Service vllm-<m>-<m>-engine-service
// (63 characters at most); a CronJob name has at most 52.
const (
	maxModelName = 21
	maxBatchName = 52
)

// PoolFacts are the facts of the config's pools with a known SKU and sane
// sharing, by name (an absurd timeSlicing, already reported, would make the
// fit check count divisors of billions).
func PoolFacts(cfg *Config) map[string]gpupool.Pool {
	out := map[string]gpupool.Pool{}
	for _, p := range cfg.Pools {
		if p.TimeSlicing < 0 || p.TimeSlicing > maxTimeSlicing {
			continue
		}
		if sku, ok := catalog.Lookup(cfg.Target, p.SKU); ok {
			out[p.Name] = gpupool.NewFacts(p, sku)
		}
	}
	return out
}

// validateServing checks storage, serving options, models (with the fit
// check) and batch jobs.
func validateServing(ps *problems, cfg *Config, skip map[string]bool) {
	o := cfg.Serving.Defaults(cfg.Target == catalog.AKS)
	p := func(k string) string { return key("serving." + k) }
	if cfg.Serving.Namespace != "" && !dnsLabelRe.MatchString(cfg.Serving.Namespace) {
		ps.add(p("namespace"), "must be a DNS label, got %q", cfg.Serving.Namespace)
	}
	if cfg.Serving.BandwidthMBps < 0 {
		ps.add(p("bandwidthMBps"), "must be > 0 MB/s, got %v", cfg.Serving.BandwidthMBps)
	}
	if a := cfg.Serving.PrometheusAddress; a != "" && !strings.HasPrefix(a, "http://") && !strings.HasPrefix(a, "https://") {
		ps.add(p("prometheusAddress"), "must be an http(s) URL, got %q", a)
	}
	for _, h := range []struct {
		k string
		v *int
	}{{"offPeakStartHour", cfg.Serving.OffPeakStartHour}, {"offPeakEndHour", cfg.Serving.OffPeakEndHour}} {
		if h.v != nil && (*h.v < 0 || *h.v > 23) {
			ps.add(p(h.k), "must be an hour 0-23 (UTC), got %d", *h.v)
		}
	}
	if *o.OffPeakStartHour == *o.OffPeakEndHour {
		ps.add(p("offPeakEndHour"), "must differ from offPeakStartHour (%d), got %d", *o.OffPeakStartHour, *o.OffPeakEndHour)
	}
	for _, c := range []struct {
		k string
		v serving.ChartOverride
	}{{"vllmStack", cfg.Serving.Charts.VLLMStack}, {"keda", cfg.Serving.Charts.KEDA}} {
		if c.v.Version != "" && !chartVersionRe.MatchString(c.v.Version) {
			ps.add(p("charts."+c.k+".version"), "must be a chart version such as 0.1.12, got %q", c.v.Version)
		}
		if c.v.Repo != "" && !strings.HasPrefix(c.v.Repo, "https://") && !strings.HasPrefix(c.v.Repo, "oci://") {
			ps.add(p("charts."+c.k+".repo"), "must be an https:// or oci:// Helm repository, got %q", c.v.Repo)
		}
	}
	pools := PoolFacts(cfg)
	poolNames := make([]string, 0, len(cfg.Pools))
	for _, pl := range cfg.Pools {
		poolNames = append(poolNames, pl.Name)
	}
	if !skip["storage"] && len(cfg.Models) > 0 {
		validateStorage(ps, cfg.Storage)
	}
	if !skip["models"] {
		seen := map[string]int{}
		for i, m := range cfg.Models {
			path := key(fmt.Sprintf("models[%d]", i))
			validateModel(ps, path, m, cfg.Storage, pools, poolNames)
			if j, dup := seen[m.Name]; dup {
				ps.add(path+".name", "must be unique, models[%d] has the same name, got %q", j, m.Name)
			}
			seen[m.Name] = i
		}
	}
	if !skip["batchJobs"] {
		seen := map[string]int{}
		for i, j := range cfg.BatchJobs {
			path := key(fmt.Sprintf("batchJobs[%d]", i))
			validateBatchJob(ps, path, j, o, pools, poolNames)
			if k, dup := seen[j.Name]; dup {
				ps.add(path+".name", "must be unique, batchJobs[%d] has the same name, got %q", k, j.Name)
			}
			seen[j.Name] = i
		}
	}
}

func validateStorage(ps *problems, s *StorageConfig) {
	if s == nil {
		ps.add(key("storage"), "required with models: where the weights live (kind s3 or azureBlob), got nothing")
		return
	}
	p := func(k string) string { return key("storage." + k) }
	switch s.Kind {
	case serving.S3:
		if !strings.HasPrefix(s.Endpoint, "https://") && !strings.HasPrefix(s.Endpoint, "http://") {
			ps.add(p("endpoint"), "must be the S3 endpoint URL (Ceph or any S3-compatible store), got %q", s.Endpoint)
		}
		if s.AccessKey == "" || s.SecretKey == "" {
			ps.add(p("accessKey"), "accessKey and secretKey are required for s3, as secrets (pulumi config set --secret --path ...), got nothing")
		}
	case serving.AzureBlob:
		if !dnsLabelRe.MatchString(s.Account) {
			ps.add(p("account"), "must be the storage account name, got %q", s.Account)
		}
		if s.AccountKey == "" && s.ClientID == "" {
			ps.add(p("accountKey"), "azureBlob needs an accountKey (a secret) or the clientId of a managed identity for workload identity, got neither")
		}
	default:
		ps.add(p("kind"), "must be one of s3, azureBlob, got %q", s.Kind)
	}
}

func validateModel(ps *problems, path string, m serving.ModelSpec, st *StorageConfig, pools map[string]gpupool.Pool, poolNames []string) {
	if !dnsLabelRe.MatchString(m.Name) || len(m.Name) > maxModelName {
		ps.add(path+".name", "must be a DNS label of at most %d characters, got %q", maxModelName, m.Name)
	}
	pool, ok := pools[m.Pool]
	if !ok {
		ps.add(path+".pool", "must name one of the pools (%s), got %q", strings.Join(poolNames, ", "), m.Pool)
	}
	if st != nil {
		want := map[string]string{serving.S3: "s3://", serving.AzureBlob: "az://"}[st.Kind]
		if want != "" && (!strings.HasPrefix(m.Source, want) || len(m.Source) <= len(want)) {
			ps.add(path+".source", "must be a %s<bucket>/<path> URL of the %s store, got %q", want, st.Kind, m.Source)
		}
	}
	weightsOK := true
	switch {
	case m.ParametersB > 0 && m.WeightsGB > 0:
		ps.add(path+".weightsGB", "set parametersB or weightsGB, not both, got %v", m.WeightsGB)
		weightsOK = false
	case m.ParametersB <= 0 && m.WeightsGB <= 0:
		ps.add(path+".parametersB", "required: billions of parameters (or weightsGB instead), got %v", m.ParametersB)
		weightsOK = false
	}
	if _, known := serving.BytesPerParameter[m.Dtype]; !known {
		ps.add(path+".dtype", "must be one of %s, got %q", strings.Join(serving.Dtypes, ", "), m.Dtype)
		weightsOK = false
	}
	if m.TensorParallel < 1 {
		ps.add(path+".tensorParallel", "must be >= 1, got %d", m.TensorParallel)
		weightsOK = false
	}
	if m.MaxModelLen < 1 || m.MaxModelLen > 1<<20 {
		ps.add(path+".maxModelLen", "must be between 1 and %d tokens, got %d", 1<<20, m.MaxModelLen)
	}
	if u := m.GPUMemoryUtilization; u <= 0 || u > 0.98 {
		ps.add(path+".gpuMemoryUtilization", "must be above 0 and at most 0.98 (vLLM needs some headroom), got %v", u)
		weightsOK = false
	}
	if m.MinReplicas < 0 {
		ps.add(path+".minReplicas", "must be >= 0 (0 scales to zero), got %d", m.MinReplicas)
	}
	if m.MaxReplicas < max(1, m.MinReplicas) {
		ps.add(path+".maxReplicas", "must be >= 1 and >= minReplicas (%d), got %d", m.MinReplicas, m.MaxReplicas)
		weightsOK = false
	}
	if m.QueueDepthTarget < 1 {
		ps.add(path+".queueDepthTarget", "must be >= 1 waiting request per replica, got %d", m.QueueDepthTarget)
	}
	if m.Hostname != "" && !hostnameRe.MatchString(m.Hostname) {
		ps.add(path+".hostname", "must be a DNS name such as llama.acme.example, got %q", m.Hostname)
	}
	if ok && weightsOK {
		for _, misfit := range serving.Fit(m.Model(), pool) {
			ps.add(path+"."+misfit.Field, "%s", misfit.Msg)
		}
	}
}

func validateBatchJob(ps *problems, path string, j serving.BatchJobSpec, o serving.Options, pools map[string]gpupool.Pool, poolNames []string) {
	if !dnsLabelRe.MatchString(j.Name) || len(j.Name) > maxBatchName {
		ps.add(path+".name", "must be a DNS label of at most %d characters, got %q", maxBatchName, j.Name)
	}
	pool, ok := pools[j.Pool]
	if !ok {
		ps.add(path+".pool", "must name one of the pools (%s), got %q", strings.Join(poolNames, ", "), j.Pool)
	}
	if strings.TrimSpace(j.Image) == "" {
		ps.add(path+".image", "required: the job's container image, got %q", j.Image)
	}
	if j.GPUs < 1 || (ok && j.GPUs > pool.GPUResourcesPerNode) {
		ps.add(path+".gpus", "must be between 1 and the %d GPUs of one %s node, got %d", pool.GPUResourcesPerNode, j.Pool, j.GPUs)
	}
	if j.DeadlineMinutes < 0 || j.DeadlineMinutes > 24*60 {
		ps.add(path+".deadlineMinutes", "must be between 1 and 1440 (0: 240), got %d", j.DeadlineMinutes)
	}
	if msg := offPeakSchedule(j.Schedule, o); msg != "" {
		ps.add(path+".schedule", "%s, got %q", msg, j.Schedule)
	}
}

var cronFieldRe = []*regexp.Regexp{
	regexp.MustCompile(`^(\*|[0-9,\-/*]+)$`), // minute
	regexp.MustCompile(`^[0-9,\-]+$`),        // hour: explicit hours only
	regexp.MustCompile(`^(\*|[0-9,\-/*]+)$`), // day of month
	regexp.MustCompile(`^(\*|[0-9,\-/*]+)$`), // month
	regexp.MustCompile(`^(\*|[0-9,\-/*]+)$`), // day of week
}

// offPeakSchedule checks a five-field cron schedule whose hours all fall in
// the off-peak window; it returns what is wrong, or "".
func offPeakSchedule(s string, o serving.Options) string {
	window := fmt.Sprintf("off-peak hours %02d:00-%02d:00 UTC", *o.OffPeakStartHour, *o.OffPeakEndHour)
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
