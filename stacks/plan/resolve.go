package plan

import (
	"cmp"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/natron/gpu-node-pools/components/backup"
	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/components/ollama"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/components/logging"
	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/components/policy"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/components/vectordb"
	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/images"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/models"
	"github.com/natron/gpu-node-pools/internal/podsecurity"
	"github.com/natron/gpu-node-pools/internal/pricing"
	"github.com/natron/gpu-node-pools/internal/secret"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/target"
	"github.com/natron/gpu-node-pools/stacks/target/registry"
)

// resolver makes one plan. decoded are decoding's problems (a list item
// that did not decode is known by name only); errs are every problem so
// far, decoding's and the blocks' own, to which resolving adds its own. A
// check whose input was reported is skipped: one mistake, one problem.
type resolver struct {
	cfg     *config.Config
	decoded field.ErrorList
	errs    field.ErrorList
	// pools are the resolved pools' facts by name; a name that maps to
	// nil is a pool that exists but could not be resolved.
	pools map[string]*gpupool.Facts
}

func key(k string) *field.Path { return field.NewPath(config.Key(k)) }

func (r *resolver) reported(p *field.Path) bool { return fielderr.Reported(r.errs, p) }
func (r *resolver) broken(p *field.Path) bool   { return fielderr.Reported(r.decoded, p) }
func (r *resolver) add(errs ...*field.Error)    { r.errs = append(r.errs, errs...) }

func resolve(cfg *config.Config, stack string, decoded field.ErrorList) (*Stack, error) {
	r := &resolver{cfg: cfg, decoded: decoded, pools: map[string]*gpupool.Facts{}}
	r.errs = append(append(r.errs, decoded...), config.Validate(cfg, decoded)...)
	t, ok := registry.Lookup(cfg.Target)
	if !ok { // reported by the target block
		return nil, newConfigError(r.errs)
	}
	d := t.Defaults()
	p := &Stack{Target: t, Cluster: cfg.Cluster, RenderDir: cfg.RenderDir, Protect: protect(cfg, stack), Needs: needsOf(cfg, t)}
	p.Pools = r.resolvePools(t)

	p.Platform = cfg.Platform.Defaults(d.GPUStack)
	p.Charts = helm.Source{Dir: cmp.Or(cfg.Platform.ChartDir, os.Getenv(ChartDirEnv)), SkipAwait: cfg.Platform.SkipAwait, Rendering: cfg.RenderDir != ""}
	if !r.reported(key("platform").Child("gpuStack")) {
		r.add(platform.CheckNFD(key("platform").Child("nfd"), p.Platform.GPUStack, cfg.Platform.NFD)...)
	}
	egress := serving.CIDR
	if d.FQDNEgress {
		egress = serving.Cilium
	}
	options := r.pinServing(cfg.Serving.Defaults(d.StorageClass, egress))
	p.ServingOptions = options
	p.Serving = r.resolveServing(p, options)
	dbs, store := r.resolveVectorDBs(p)
	if len(dbs) > 0 {
		p.VectorDBs = &VectorDBsPart{Specs: dbs, Store: store, InstallOperator: options.InstallCloudNativePG && cfg.RenderDir == "",
			OperatorNamespace: options.CloudNativePGNamespace, ServingNamespace: options.Namespace, PrometheusNamespace: options.PrometheusNamespace,
			MonitorLabels: p.Platform.Monitoring.ServiceMonitorLabels, RuleLabels: p.Platform.Monitoring.RuleLabels}
	}
	if cfg.Policies.On() {
		pol := cfg.Policies.Resolve(policy.Scope{PlatformNamespace: p.Platform.Namespace, ServingNamespace: options.Namespace, BatchNamespace: options.BatchNamespace,
			CPUOnlyNamespaces: vectordb.Namespaces(dbs)})
		p.Policies = &pol
	}
	p.Costs = costs(cfg.Pricing, p)
	if l := cfg.Logging.Defaults(); l.Install {
		p.Logging = &LoggingPart{Spec: l}
	}
	p.LogTolerations = logging.Tolerations(p.Facts())
	if cfg.GitOps.Set() {
		p.GitOps = &GitOpsPart{Spec: cfg.GitOps.Defaults(stack), Prefix: objectName(stack) + "-gpu"}
		r.checkTwoClusters(t, p.GitOps.Spec)
	}
	if cfg.Backup.Enabled {
		b := &BackupPart{Spec: cfg.Backup.Defaults()}
		b.Spec.PluginImage = images.Pin(b.Spec.PluginImage, cfg.Images.Digests)
		b.Covered, b.Skipped = backupScope(p.Parts()) // every part but itself
		if l := b.Spec.Location; l != nil && l.ClientID != "" {
			b.Identity = r.workloadIdentity(t, key("backup").Child("location", "clientId"), l.ClientID, backupIdentityRefused)
		}
		p.Backup = b
	}
	for _, part := range p.Parts() {
		p.Images = append(p.Images, part.Images()...)
	}
	r.checkPins(p)
	if id := r.resolveIdentity(t, options); id != nil {
		p.Identities = append(p.Identities, *id)
		if p.Serving != nil {
			p.Serving.Identity = t.(target.Federator).WorkloadIdentity(id.ClientID)
		}
	}
	p.Identities = append(p.Identities, r.addOnIdentities(p)...)
	// Both checks read the GPU stack's charts: not when it was reported.
	gpuStackOK := !r.broken(key("platform")) && !r.reported(key("platform").Child("gpuStack"))
	if p.Policies != nil && gpuStackOK && !r.broken(key("serving")) && !r.broken(key("batchJobs")) {
		r.add(p.Policies.CheckImages(key("policies").Child("allowedRegistries", "registries"), p.Images)...)
	}
	if gpuStackOK {
		r.checkChartDir(p)
	}
	if len(r.errs) > 0 {
		return nil, newConfigError(r.errs)
	}
	return p, nil
}

// resolvePools looks each pool's node shape up in the target's catalog
// section (the one SKU lookup of the program) and makes its facts. A pool
// with a problem is known by name, without facts.
func (r *resolver) resolvePools(t target.Target) []gpupool.Resolved {
	var out []gpupool.Resolved
	for i, s := range r.cfg.Pools {
		ip := key("pools").Index(i)
		r.pools[s.Name] = nil
		if r.broken(ip) {
			continue
		}
		sku, err := t.Catalog().SKU(ip.Child("sku"), s.SKU)
		if err != nil {
			r.add(err)
			continue
		}
		if !r.reported(ip.Child("migProfile")) {
			r.add(s.ValidateSKU(ip, sku)...)
		}
		if r.reported(ip) {
			continue
		}
		pool := gpupool.Resolve(s, sku, t.SpotToleration())
		out = append(out, pool)
		r.pools[s.Name] = &pool.Facts
	}
	return out
}

// pool finds the pool a model or batch job names; known is false (and
// reported) when there is no such pool, facts nil when the pool has a
// problem of its own.
func (r *resolver) pool(p *field.Path, name string) (facts *gpupool.Facts, known bool) {
	facts, known = r.pools[name]
	if !known {
		names := make([]string, len(r.cfg.Pools))
		for i, s := range r.cfg.Pools {
			names[i] = s.Name
		}
		r.add(fielderr.Invalid(p, name, "must name one of the pools (%s)", strings.Join(names, ", ")))
	}
	return facts, known
}

// resolveIdentity is the download Job's workload identity when the weights
// store uses one: only targets that federate identities can.
func (r *resolver) resolveIdentity(t target.Target, o serving.Options) *target.Identity {
	st := r.cfg.Storage
	if st == nil || st.ClientID == "" || serving.VLLMModels(r.cfg.Models) == 0 || r.broken(key("storage")) {
		return nil
	}
	p := key("storage")
	if _, ok := r.federator(t, p.Child("clientId"), st.ClientID, storageIdentityRefused); !ok {
		return nil
	}
	if !r.identityNamed(p, st.IdentityName, "the "+serving.DownloadServiceAccount+" service account") {
		return nil
	}
	return &target.Identity{Namespace: o.Namespace, ServiceAccount: serving.DownloadServiceAccount,
		ClientID: st.ClientID, Name: st.IdentityName, ResourceGroup: st.IdentityResourceGroup,
		Resource: "weights-download", Key: p.Child("clientId").String(), Who: "the weight download", Instead: "use storage.accountKey"}
}

// addOnIdentities are the service accounts of the add-ons that sign in
// with workload identity: each backed-up pgvector database's cluster
// (CloudNativePG names its service account after the cluster,
// cloudnative-pg v1.30.0 docs/src/security.md) and Velero's server.
func (r *resolver) addOnIdentities(p *Stack) []target.Identity {
	var out []target.Identity
	if v := p.VectorDBs; v != nil && v.Store != nil && !v.Store.Identity.IsZero() {
		st, at := r.cfg.Storage, key("storage")
		for _, s := range v.Specs {
			if s.Backup != "" && s.Kind == vectordb.PGVector && r.identityNamedAt(at.Child("backupIdentityName"), "backupClientId", st.BackupIdentityName, "the pgvector databases' service accounts") {
				out = append(out, target.Identity{Namespace: s.Namespace, ServiceAccount: s.Name, ClientID: st.BackupClientID, Name: st.BackupIdentityName,
					ResourceGroup: st.BackupIdentityResourceGroup, Resource: "vectordb-" + s.Name, Key: at.Child("backupClientId").String(),
					Who: "pgvector " + s.Name + "'s backups", Instead: "back up to S3 storage"})
			}
		}
	}
	if b := p.Backup; b != nil && !b.Identity.IsZero() {
		l, at := b.Spec.Location, key("backup").Child("location")
		if !r.identityNamed(at, l.IdentityName, "Velero's "+backup.ServerServiceAccount+" service account") {
			return out
		}
		out = append(out, target.Identity{Namespace: b.Spec.Namespace, ServiceAccount: backup.ServerServiceAccount, ClientID: l.ClientID,
			Name: l.IdentityName, ResourceGroup: l.IdentityResourceGroup, Resource: "velero", Key: at.Child("clientId").String(),
			Who: "Velero", Instead: "use keys"})
	}
	return out
}

// identityNamed reports whether the block at p names the managed identity
// its clientId belongs to; when it does not, the problem is told once,
// whichever service account (sa) asks first.
func (r *resolver) identityNamed(p *field.Path, name, sa string) bool {
	return r.identityNamedAt(p.Child("identityName"), "clientId", name, sa)
}

// identityNamedAt is identityNamed for the name's own key, beside the
// client ID's key clientKey.
func (r *resolver) identityNamedAt(p *field.Path, clientKey, name, sa string) bool {
	if name == "" && !r.reported(p) {
		r.add(fielderr.Required(p, "required with %s: the managed identity's name, to federate it with %s", clientKey, sa))
	}
	return name != ""
}

// Why a clientId is refused on a target that cannot federate identities
// (%[1]s: the targets that can, %[2]s: this one), for the weights store and
// for Velero.
const (
	storageIdentityRefused = "workload identity needs a target that federates service accounts with a cloud identity (%[1]s); on target %[2]s use an accountKey"
	backupIdentityRefused  = "workload identity needs a target that federates service accounts with a cloud identity (%[1]s); on target %[2]s use keys"
)

// federating are the targets that federate service accounts with cloud
// identities.
func federating() string {
	var out []string
	for _, t := range registry.All() {
		if _, ok := t.(target.Federator); ok {
			out = append(out, string(t.Name()))
		}
	}
	return strings.Join(out, ", ")
}

// federator is t as a target that federates service accounts with cloud
// identities; a target that cannot has the clientId at p refused, once,
// with why.
func (r *resolver) federator(t target.Target, p *field.Path, clientID, why string) (target.Federator, bool) {
	f, ok := t.(target.Federator)
	if !ok && !r.reported(p) {
		r.add(fielderr.Forbidden(p, clientID, why, federating(), t.Name()))
	}
	return f, ok
}

// workloadIdentity is what pods carry to sign in as the identity with
// clientID, as the target spells it (zero where the target refuses it).
func (r *resolver) workloadIdentity(t target.Target, p *field.Path, clientID, why string) kube.WorkloadIdentity {
	f, ok := r.federator(t, p, clientID, why)
	if !ok {
		return kube.WorkloadIdentity{}
	}
	return f.WorkloadIdentity(clientID)
}

// resolveServing makes each model's engine (with the fit check against
// its pool) and each batch job.
func (r *resolver) resolveServing(p *Stack, o serving.Options) *serving.Resolved {
	cfg := r.cfg
	if len(cfg.Models) == 0 && len(cfg.BatchJobs) == 0 {
		return nil
	}
	runtime := p.Platform.RuntimeClass()
	sp := &serving.Resolved{Options: o, Storage: cfg.Storage, PodSecurity: cfg.PodSecurity,
		Source: p.Charts}
	r.checkEgress(o)
	for i, m := range cfg.Models {
		ip := key("models").Index(i)
		if r.broken(ip) {
			continue
		}
		if m.APIKey != "" {
			if sp.ModelKeys == nil {
				sp.ModelKeys = map[string]secret.Secret{}
			}
			sp.ModelKeys[m.Name] = m.APIKey
		}
		if m.IsOllama() {
			r.resolveOllama(ip, m, p, sp)
			continue
		}
		if r.reported(ip.Child("runtime")) { // neither runtime's rules apply
			continue
		}
		facts, _ := r.pool(ip.Child("pool"), m.Pool)
		if facts == nil || r.reportedAny(ip, serving.SizeFields) {
			continue
		}
		var entry *models.Card
		if known, ok := models.Known.Lookup(m.CatalogModel); ok {
			entry = &known
		}
		sized, estimatedFrom := m.WithDefaults(entry, *facts)
		if estimatedFrom != "" {
			p.Warnings = append(p.Warnings, serving.EstimateWarning(ip.String(), sized, estimatedFrom))
		}
		e := serving.NewEngine(sized, *facts, o, p.Platform.Monitoring.ServiceMonitorLabels, runtime)
		// the sizes the file gives: misfits name them, the summary explains the others
		e.Set = fit.Keys{TensorParallel: m.TensorParallel != 0, MaxModelLen: m.MaxModelLen != 0}
		r.add(fit.Fit(ip, e.Model, *facts, p.Target.Catalog().SKUs()...)...)
		sp.Engines = append(sp.Engines, e)
	}
	for i, j := range cfg.BatchJobs {
		ip := key("batchJobs").Index(i)
		if r.broken(ip) {
			continue
		}
		facts, _ := r.pool(ip.Child("pool"), j.Pool)
		if facts == nil {
			continue
		}
		if !r.reported(ip.Child("gpus")) && j.GPUs > facts.GPUResourcesPerNode {
			r.add(fielderr.Invalid(ip.Child("gpus"), j.GPUs, "must be between 1 and the %d GPUs of one %s node", facts.GPUResourcesPerNode, j.Pool))
		}
		r.checkJobSecurity(ip.Child("security"), j, sp)
		sp.Jobs = append(sp.Jobs, serving.NewJob(j, *facts, runtime))
	}
	return sp
}

// resolveOllama places an Ollama model: on its GPU pool, or on CPU nodes
// (no pool; a nodeSelector must not pick a GPU pool), sized and checked
// against the pool.
func (r *resolver) resolveOllama(ip *field.Path, m serving.ModelSpec, p *Stack, sp *serving.Resolved) {
	var pool *gpupool.Facts
	if m.Pool != "" {
		facts, _ := r.pool(ip.Child("pool"), m.Pool)
		if facts == nil {
			return
		}
		pool = facts
	} else if name, picks := gpupool.SelectedPool(m.NodeSelector, p.Facts()); picks {
		r.add(fielderr.Invalid(ip.Child("nodeSelector"), m.NodeSelector, "selects the nodes of GPU pool %s: to run on it, set pool: %s (a model without pool runs on CPU nodes)", name, name))
		return
	}
	srv, sized := serving.NewOllamaServer(m, pool, sp.Options, p.Platform.RuntimeClass())
	if !sized {
		r.add(ollama.SizeProblem(ip, m.Source))
		return
	}
	r.add(ollama.Fit(ip, srv)...)
	sp.Ollamas = append(sp.Ollamas, srv)
}

// checkEgress: with cidr, the download Jobs reach the weights store only
// through the ranges the stack names.
func (r *resolver) checkEgress(o serving.Options) {
	p := key("serving")
	if serving.VLLMModels(r.cfg.Models) == 0 || r.reported(p.Child("networkPolicy")) {
		return
	}
	switch {
	case o.NetworkPolicy == serving.CIDR && len(o.DownloadCIDRs) == 0:
		r.add(fielderr.Required(p.Child("downloadCIDRs"), "required with networkPolicy %s: the address ranges of the weights store (and, with workload identity, of %s), or set networkPolicy to %s where the cluster runs Cilium", serving.CIDR, serving.IdentityHost, serving.Cilium))
	case o.NetworkPolicy == serving.Cilium && len(o.DownloadCIDRs) > 0:
		r.add(fielderr.Forbidden(p.Child("downloadCIDRs"), o.DownloadCIDRs, "read only with networkPolicy %s; with %s the download Jobs reach the store by name", serving.CIDR, serving.Cilium))
	}
}

// checkJobSecurity: what a batch job declares beyond the restricted
// defaults must be admitted by its namespace's level, as Pod Security
// admission judges the job's pods.
func (r *resolver) checkJobSecurity(p *field.Path, j serving.BatchJobSpec, sp *serving.Resolved) {
	if r.reported(p) {
		return
	}
	need, why, err := j.Security.NeededLevel(j.Name)
	if err != nil {
		r.add(fielderr.Invalid(p, j.Security, "%v", err))
		return
	}
	if have := sp.PodSecurity.Level(podsecurity.Batch); podsecurity.Stricter(have, need) {
		declared, _ := json.Marshal(j.Security)
		r.add(fielderr.Forbidden(p, string(declared), "needs Pod Security level %s (%s), and the batch namespace %q enforces %s: lower it with %s.batch {level: %s, reason: ...}, or declare less",
			need, strings.Join(why, "; "), sp.Options.BatchNamespace, have, config.Key("podSecurity"), need))
	}
}

func (r *resolver) reportedAny(p *field.Path, keys []string) bool {
	for _, k := range keys {
		if r.reported(p.Child(k)) {
			return true
		}
	}
	return false
}

// charts are the charts the stack installs: every part's.
func (p *Stack) charts() []helm.Chart {
	var out []helm.Chart
	for _, part := range p.Parts() {
		out = append(out, part.Charts()...)
	}
	return out
}

// checkChartDir fails early, naming each missing archive, rather than in
// the middle of an up.
func (r *resolver) checkChartDir(p *Stack) {
	dir := p.Charts.Dir
	if dir == "" {
		return
	}
	at := key("platform").Child("chartDir")
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		r.add(fielderr.Invalid(at, dir, "must be a directory of chart archives (or set %s)", ChartDirEnv))
		return
	}
	for _, c := range p.charts() {
		if _, err := os.Stat(c.Archive(dir)); err != nil {
			r.add(fielderr.Invalid(at, dir, "has no %s: put the chart archive there", filepath.Base(c.Archive(dir))))
		}
	}
}

// costs prices each pool: at minNodes, at maxNodes, and at the nodes the
// models' minReplicas keep up (each replica takes tensorParallel of a
// node's GPU resources).
func costs(spec pricing.Spec, p *Stack) map[string]Cost {
	busy := map[string]int{}
	if p.Serving != nil {
		for _, e := range p.Serving.Engines {
			busy[e.Pool.Name] += e.MinReplicas * e.TensorParallel
		}
	}
	out := map[string]Cost{}
	for _, pool := range p.Pools {
		f := pool.Facts
		expected := (busy[f.Name] + f.GPUResourcesPerNode - 1) / max(f.GPUResourcesPerNode, 1)
		c, note := spec.Cost(pricing.PoolShape{SKU: f.SKU, MinNodes: f.MinNodes, MaxNodes: f.MaxNodes, Expected: expected, Spot: f.Spot}, p.Target.Prices())
		out[f.Name] = Cost{Cost: c, Note: note}
	}
	return out
}

// objectName makes a stack name (letters, digits, '-', '_', '.') a
// Kubernetes object name's start.
func objectName(stack string) string {
	return strings.Trim(strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, stack), "-")
}

// resolveVectorDBs defaults the vector databases and checks what needs
// the rest of the stack: no nodeSelector that picks a GPU pool, and
// pgvector backups only into the stack's storage, of its kind.
func (r *resolver) resolveVectorDBs(p *Stack) ([]vectordb.Spec, *vectordb.Store) {
	var out []vectordb.Spec
	backups := false
	for i, s := range r.cfg.VectorDBs {
		ip := key("vectorDBs").Index(i)
		if r.broken(ip) {
			continue
		}
		r.add(s.CheckNodes(ip.Child("nodeSelector"), p.Facts())...)
		if s.Backup != "" && !r.reported(ip.Child("backup")) {
			backups = true
			st := r.cfg.Storage
			switch {
			case st == nil:
				r.add(fielderr.Required(key("storage"), "required by vectorDBs[%d].backup: the object store the backups go to", i))
			case st.Kind == serving.S3 && !strings.HasPrefix(s.Backup, "s3://"):
				r.add(fielderr.Invalid(ip.Child("backup"), s.Backup, "must be an s3://bucket/path in the stack's S3 storage (%s)", st.Endpoint))
			case st.Kind == serving.AzureBlob && !strings.HasPrefix(s.Backup, "https://"+st.Account+".blob."):
				r.add(fielderr.Invalid(ip.Child("backup"), s.Backup, "must be a container URL of the stack's storage account, https://%s.blob.core.windows.net/<container>/<path>", st.Account))
			case st.Kind == serving.AzureBlob && st.BackupClientID == "":
				r.add(fielderr.Required(key("storage").Child("backupClientId"), "required by vectorDBs[%d].backup: CloudNativePG signs in to Blob storage with workload identity, as an identity that may write the backups (the weights' clientId only reads them)", i))
			}
		}
		s = s.Defaults()
		s.Image = images.Pin(s.Image, r.cfg.Images.Digests)
		out = append(out, s)
	}
	if !backups || r.cfg.Storage == nil {
		return out, nil
	}
	st := r.cfg.Storage
	if !r.backupCredentials(st) {
		return out, nil
	}
	if st.Kind == serving.AzureBlob {
		return out, &vectordb.Store{Identity: r.workloadIdentity(p.Target, key("storage").Child("backupClientId"), st.BackupClientID, storageIdentityRefused)}
	}
	return out, &vectordb.Store{Endpoint: st.Endpoint, AccessKey: st.BackupAccessKey, SecretKey: st.BackupSecretKey}
}

// backupCredentials: the pgvector backups write with a credential of
// their own, never the weights' (which would then have to write, and be
// where a backup's pods run): whoever holds the weights' credential
// could otherwise replace what the engines load.
func (r *resolver) backupCredentials(st *serving.Storage) bool {
	p := key("storage")
	n := len(r.errs)
	switch st.Kind {
	case serving.S3:
		for _, k := range [][2]string{{"backupAccessKey", string(st.BackupAccessKey)}, {"backupSecretKey", string(st.BackupSecretKey)}} {
			if k[1] == "" {
				r.add(fielderr.Required(p.Child(k[0]), "required by the pgvector backups: S3 keys that may write the backup bucket, apart from the weights' read-only keys, as a secret: pulumi config set --secret --path %s <value>", p.Child(k[0])))
			}
		}
		if st.BackupAccessKey != "" && st.BackupAccessKey == st.AccessKey {
			r.add(fielderr.Invalid(p.Child("backupAccessKey"), "(the weights' key)", "must differ from storage.accessKey: the weights' key only reads, and no pod beside a database may hold it"))
		}
	case serving.AzureBlob:
		if st.BackupClientID != "" && st.BackupClientID == st.ClientID {
			r.add(fielderr.Invalid(p.Child("backupClientId"), st.BackupClientID, "must differ from storage.clientId: the weights' identity only reads, and no pod beside a database may sign in as it"))
		}
	}
	return len(r.errs) == n
}

// checkTwoClusters: where pools live in a management cluster, the GitOps
// tool syncs the workload tree and the Cluster API objects to two
// clusters, which the defaults (the cluster the tool runs in) do not.
func (r *resolver) checkTwoClusters(t target.Target, g gitops.Spec) {
	p := key("gitops")
	if !t.ManagementCluster() || r.broken(p) || g.WorkloadCluster != g.ManagementCluster {
		return
	}
	where, names := g.WorkloadCluster, "a cluster registered in Argo CD, by name or API server URL"
	if g.Tool == gitops.Flux {
		names = "a kubeconfig Secret in Flux's namespace"
	}
	if where == "" {
		where = "the cluster " + g.Tool + " runs in"
	}
	r.add(fielderr.Invalid(p.Child("managementCluster"), g.ManagementCluster,
		"must differ from workloadCluster (%s): on target %s the pools' Cluster API objects go to the management cluster and the GPU stack to the workload cluster; set the one %s does not run in (%s)",
		where, t.Name(), g.Tool, names))
}

// NodeShape is the node shape any target's catalog names so (an AKS VM
// size or a bare-metal profile): what gpu-plan eval evaluates. The problem
// lists every known shape.
func NodeShape(p *field.Path, name string) (catalog.SKU, *field.Error) {
	var known []string
	for _, t := range registry.All() {
		if s, err := t.Catalog().SKU(p, name); err == nil {
			return s, nil
		}
		known = append(known, t.Catalog().Names()...)
	}
	return catalog.SKU{}, fielderr.Invalid(p, name, "is no target's node shape; known: %s", strings.Join(known, ", "))
}
