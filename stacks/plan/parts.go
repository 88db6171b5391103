package plan

import (
	"fmt"
	"slices"

	"github.com/natron/gpu-node-pools/components/backup"
	"github.com/natron/gpu-node-pools/components/gitops"
	"github.com/natron/gpu-node-pools/components/logging"
	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/components/policy"
	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/components/vectordb"
	"github.com/natron/gpu-node-pools/internal/helm"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/stacks/config"
)

// Part is one part of the workload side of a stack as its plan resolved
// it: the GPU platform, the policies, model serving and each add-on. Each
// says once what it installs, what it runs and what of it is backed up;
// the plan's checks and the backup scope loop over the parts, and the
// program registers them in order (Stack.Parts).
type Part interface {
	// Key is the config block the part comes from.
	Key() string
	// Charts are the charts it installs.
	Charts() []helm.Chart
	// Images are the images it runs in the policies' scope, with what
	// runs them.
	Images() []policy.Image
	// Namespaces are the namespaces it owns, which backups cover.
	Namespaces() []string
	// SkipClasses are the storage classes of its volumes that backups
	// leave out.
	SkipClasses() []string
}

// nothing is a part's answer where it installs, runs or owns nothing.
type nothing struct{}

func (nothing) Charts() []helm.Chart   { return nil }
func (nothing) Images() []policy.Image { return nil }
func (nothing) Namespaces() []string   { return nil }
func (nothing) SkipClasses() []string  { return nil }

// Parts are the stack's parts in the order they are registered: the GPU
// platform, the policies the workloads are admitted under, the log
// collector, model serving, the vector databases, backups (of all the
// above) and the GitOps delivery (of all the above).
func (p *Stack) Parts() []Part {
	out := []Part{PlatformPart{Spec: p.Platform}}
	if p.Policies != nil {
		out = append(out, PoliciesPart{Resolved: *p.Policies})
	}
	if p.Logging != nil {
		out = append(out, *p.Logging)
	}
	if p.Serving != nil {
		out = append(out, ServingPart{Resolved: p.Serving})
	}
	if p.VectorDBs != nil {
		out = append(out, *p.VectorDBs)
	}
	if p.Backup != nil {
		out = append(out, *p.Backup)
	}
	if p.GitOps != nil {
		out = append(out, *p.GitOps)
	}
	return out
}

// PlatformPart is the GPU platform layer.
type PlatformPart struct {
	nothing
	Spec platform.Spec
}

func (PlatformPart) Key() string { return "platform" }

func (t PlatformPart) Charts() []helm.Chart { return t.Spec.Installed() }

func (t PlatformPart) Images() []policy.Image {
	var out []policy.Image
	for _, c := range t.Charts() {
		for _, img := range c.Images {
			out = append(out, policy.Image{Ref: img, By: "the " + string(t.Spec.GPUStack) + " platform layer"})
		}
	}
	return out
}

func (t PlatformPart) Namespaces() []string { return []string{t.Spec.Namespace} }

// PoliciesPart are the Kyverno policies: cluster-wide objects only.
type PoliciesPart struct {
	nothing
	policy.Resolved
}

func (PoliciesPart) Key() string { return "policies" }

// LoggingPart is the log collector the stack installs.
type LoggingPart struct {
	nothing
	Spec logging.Spec
}

func (LoggingPart) Key() string { return "logging" }

func (t LoggingPart) Charts() []helm.Chart { return []helm.Chart{t.Spec.Chart} }

func (t LoggingPart) Images() []policy.Image {
	var out []policy.Image
	for _, img := range t.Spec.Chart.Images {
		out = append(out, policy.Image{Ref: img, By: config.Key("logging") + ".install (Grafana Alloy)"})
	}
	return out
}

func (t LoggingPart) Namespaces() []string { return []string{t.Spec.Namespace} }

// ServingPart is model serving and batch work.
type ServingPart struct{ *serving.Resolved }

func (ServingPart) Key() string { return "serving" }

func (t ServingPart) Charts() []helm.Chart { return t.Resolved.Charts() }

// Images are the vLLM engines' and their helpers', the Ollama servers'
// and their proxies', and each batch job's.
func (t ServingPart) Images() []policy.Image {
	o := t.Options
	var out []policy.Image
	if len(t.Engines) > 0 {
		out = append(out,
			policy.Image{Ref: o.Image, By: config.Key("serving.image")},
			policy.Image{Ref: o.RcloneImage, By: "the weight download Job"})
	}
	if len(t.Engines)+len(t.Ollamas) > 0 {
		out = append(out,
			policy.Image{Ref: o.WaitImage, By: "the model servers' init container that waits for the weights"},
			policy.Image{Ref: o.ProxyImage, By: config.Key("serving.proxyImage") + " (the models' API-key proxy and gateway)"})
	}
	if len(t.Ollamas) > 0 {
		out = append(out, policy.Image{Ref: o.OllamaImage, By: config.Key("serving.ollamaImage")})
	}
	for i, j := range t.Jobs {
		if j.Image != "" {
			out = append(out, policy.Image{Ref: j.Image, By: config.Key(fmt.Sprintf("batchJobs[%d].image", i))})
		}
	}
	return out
}

func (t ServingPart) Namespaces() []string {
	return []string{t.Options.Namespace, t.Options.BatchNamespace}
}

// SkipClasses: the weight caches' class, whose volumes hold what object
// storage holds already.
func (t ServingPart) SkipClasses() []string {
	if len(t.Engines)+len(t.Ollamas) == 0 {
		return nil
	}
	return []string{t.Options.StorageClass}
}

// VectorDBsPart are the vector databases, on CPU nodes.
type VectorDBsPart struct {
	nothing
	// Specs are the defaulted databases; Store where pgvector's backups
	// go (nil without).
	Specs []vectordb.Spec
	Store *vectordb.Store
	// InstallOperator installs CloudNativePG in OperatorNamespace.
	InstallOperator   bool
	OperatorNamespace string
	// ServingNamespace and PrometheusNamespace may connect; MonitorLabels
	// and RuleLabels are what the cluster's Prometheus selects.
	ServingNamespace, PrometheusNamespace string
	MonitorLabels, RuleLabels             map[string]string
}

func (VectorDBsPart) Key() string { return "vectorDBs" }

// Charts are CloudNativePG's operator when the stack installs it, and
// Qdrant's for Qdrant databases. Their images run in CPU-only namespaces,
// outside the registry policy's scope.
func (t VectorDBsPart) Charts() []helm.Chart {
	var out []helm.Chart
	if t.InstallOperator {
		out = append(out, vectordb.OperatorChart)
	}
	if slices.ContainsFunc(t.Specs, func(s vectordb.Spec) bool { return s.Kind == vectordb.Qdrant }) {
		out = append(out, vectordb.QdrantChart)
	}
	return out
}

func (t VectorDBsPart) Namespaces() []string { return vectordb.Namespaces(t.Specs) }

// BackupPart is the Velero Schedule over the other parts, and Velero when
// the stack installs it.
type BackupPart struct {
	nothing
	Spec backup.Spec
	// Covered are the namespaces the Schedule covers, Skipped the storage
	// classes it leaves out: every other part's.
	Covered, Skipped []string
	// Identity is the Velero server's workload identity (zero: none).
	Identity kube.WorkloadIdentity
}

func (BackupPart) Key() string { return "backup" }

func (t BackupPart) Charts() []helm.Chart {
	if !t.Spec.Install {
		return nil
	}
	return []helm.Chart{t.Spec.Chart}
}

func (t BackupPart) Images() []policy.Image {
	if !t.Spec.Install {
		return nil
	}
	return []policy.Image{{Ref: t.Spec.Chart.Images[0], By: config.Key("backup") + ".install (Velero)"},
		{Ref: t.Spec.PluginImage, By: config.Key("backup") + ".location.provider (Velero's plugin)"}}
}

// backupScope is what a Schedule over parts covers: every namespace they
// own, sorted, and the classes they leave out.
func backupScope(parts []Part) (namespaces, skipClasses []string) {
	for _, p := range parts {
		namespaces = append(namespaces, p.Namespaces()...)
		skipClasses = append(skipClasses, p.SkipClasses()...)
	}
	slices.Sort(namespaces)
	return slices.Compact(namespaces), skipClasses
}

// GitOpsPart is the GitOps tool's objects, which sync the rendered trees.
type GitOpsPart struct {
	nothing
	Spec gitops.Spec
	// Prefix starts its objects' names.
	Prefix string
}

func (GitOpsPart) Key() string { return "gitops" }
