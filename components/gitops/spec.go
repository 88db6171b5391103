// Package gitops delivers a rendered stack the GitOps way, with the Argo CD
// or Flux the customer's platform already runs: the Application (or
// GitRepository and Kustomizations) that syncs the rendered trees in order,
// the layout of those trees (layers, sync waves, kustomization.yaml files),
// and ExternalSecrets for the Secrets a render leaves out.
package gitops

import (
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
)

// Tools.
const (
	ArgoCD = "argocd"
	Flux   = "flux"
)

// Tools are the supported GitOps tools.
var Tools = []string{ArgoCD, Flux}

// Spec is the gitops block (gpu-node-pools:gitops).
type Spec struct {
	// Tool is argocd or flux.
	// Default: argocd.
	Tool string `json:"tool,omitempty"`
	// RepoURL is the customer's platform repository (required): https://
	// or ssh://, on one of allowedHosts, without credentials in it.
	RepoURL string `json:"repoURL"`
	// AllowedHosts are the git hosts the platform repository may be on:
	// the publish step's token goes there (the fleet's GITOPS_HOSTS
	// bounds it again).
	// Default: github.com.
	AllowedHosts []string `json:"allowedHosts,omitempty"`
	// TargetRevision is the branch.
	// Default: main.
	TargetRevision string `json:"targetRevision,omitempty"`
	// Path is the folder the render is published to; its workload/ and
	// management/ trees are synced (required).
	Path string `json:"path"`
	// Namespace is the tool's own namespace.
	// Default: argocd, or flux-system.
	Namespace string `json:"namespace,omitempty"`
	// Project is the Argo CD project.
	// Default: default.
	Project string `json:"project,omitempty"`
	// WorkloadCluster is where the workload tree goes: for Argo CD a
	// registered cluster's name or its API server URL, for Flux the name of
	// a kubeconfig Secret in Flux's namespace.
	// Default: the cluster the tool runs in.
	WorkloadCluster string `json:"workloadCluster,omitempty"`
	// ManagementCluster is where the management tree goes, as
	// workloadCluster.
	// Default: the cluster the tool runs in.
	ManagementCluster string `json:"managementCluster,omitempty"`
	// Interval is Flux's reconcile interval.
	// Default: 5m.
	Interval string `json:"interval,omitempty"`
	// Timeout is the time a layer may take to become ready (Flux).
	// Default: 10m.
	Timeout string `json:"timeout,omitempty"`
	// CredentialsSecret is the Secret in Flux's namespace that holds the
	// repository's credentials (Flux only; Argo CD keeps its own).
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
	// ExternalSecrets, when set, renders an ExternalSecret per Secret the
	// render leaves out, from the platform's External Secrets Operator.
	ExternalSecrets *ExternalSecrets `json:"externalSecrets,omitempty"`
}

// ExternalSecrets are the platform's External Secrets Operator store.
type ExternalSecrets struct {
	// Store names the SecretStore or ClusterSecretStore.
	Store string `json:"store"`
	// StoreKind is ClusterSecretStore or SecretStore.
	// Default: ClusterSecretStore.
	StoreKind string `json:"storeKind,omitempty"`
	// KeyPrefix is where the secrets live in the store: each Secret's values
	// are the properties of <keyPrefix>/<namespace>/<name>.
	// Default: gpu-node-pools/<stack>.
	KeyPrefix string `json:"keyPrefix,omitempty"`
	// RefreshInterval is how often the External Secrets Operator reads the
	// store again.
	// Default: 1h.
	RefreshInterval string `json:"refreshInterval,omitempty"`
}

// Store kinds.
var StoreKinds = []string{"ClusterSecretStore", "SecretStore"}

// Defaults.
const (
	DefaultRevision  = "main"
	DefaultServer    = "https://kubernetes.default.svc"
	DefaultProject   = "default"
	DefaultInterval  = "5m"
	DefaultTimeout   = "10m"
	DefaultRefresh   = "1h"
	defaultStoreKind = "ClusterSecretStore"
)

// DefaultNamespace is the tool's usual namespace.
func DefaultNamespace(tool string) string {
	if tool == Flux {
		return "flux-system"
	}
	return "argocd"
}

// Flux's duration pattern (GitRepository and Kustomization CRDs, v1.9):
// ms, s, m and h units only.
var fluxDuration = regexp.MustCompile(`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`)

// Set reports whether the block is there at all (Pulumi.yaml gives an
// absent block the default {}).
func (s Spec) Set() bool { return !reflect.DeepEqual(s, Spec{}) }

// Validate checks the block as written; rendering is whether the stack
// has a renderDir, which GitOps delivery syncs.
func (s Spec) Validate(p *field.Path, rendering bool) field.ErrorList {
	if !s.Set() {
		return nil
	}
	var errs field.ErrorList
	if !rendering {
		errs = append(errs, fielderr.Forbidden(p, "(set)", "GitOps delivery syncs the rendered files: set renderDir too"))
	}
	if s.Tool != "" {
		errs = append(errs, fielderr.OneOf(p.Child("tool"), s.Tool, Tools)...)
	}
	errs = append(errs, s.validateRepo(p)...)
	if s.Path == "" || strings.HasPrefix(s.Path, "/") || strings.Contains(s.Path, "..") {
		errs = append(errs, fielderr.Invalid(p.Child("path"), s.Path, "required: the folder of the platform repository the render is published to, relative, e.g. clusters/acme/gpu"))
	}
	if s.Namespace != "" && !fielderr.DNSLabel(s.Namespace) {
		errs = append(errs, fielderr.Invalid(p.Child("namespace"), s.Namespace, "must be a DNS label"))
	}
	flux := s.Tool == Flux
	if flux {
		for key, v := range map[string]string{"interval": s.Interval, "timeout": s.Timeout} {
			if v != "" && !fluxDuration.MatchString(v) {
				errs = append(errs, fielderr.Invalid(p.Child(key), v, "must be a Flux duration such as 5m (units ms, s, m, h)"))
			}
		}
		if s.Project != "" {
			errs = append(errs, fielderr.Forbidden(p.Child("project"), s.Project, "an Argo CD project: not read with tool flux"))
		}
		// Flux clones ssh:// only with a key and known hosts from the
		// GitRepository's secretRef (source-controller
		// docs/spec/v1/gitrepositories.md, "SSH authentication").
		if u, err := url.Parse(s.RepoURL); err == nil && u.Scheme == "ssh" && s.CredentialsSecret == "" {
			errs = append(errs, fielderr.Required(p.Child("credentialsSecret"),
				"an ssh:// repository needs the Secret with Flux's SSH key and known_hosts, in Flux's namespace: flux create secret git <name> --url=%s, then set credentialsSecret: <name>", s.RepoURL))
		}
	} else {
		for key, v := range map[string]string{"interval": s.Interval, "timeout": s.Timeout, "credentialsSecret": s.CredentialsSecret} {
			if v != "" {
				errs = append(errs, fielderr.Forbidden(p.Child(key), v, "read with tool flux only"))
			}
		}
	}
	for key, v := range map[string]string{"workloadCluster": s.WorkloadCluster, "managementCluster": s.ManagementCluster, "credentialsSecret": s.CredentialsSecret} {
		if v == "" || (!flux && strings.HasPrefix(v, "https://")) {
			continue
		}
		if !fielderr.DNSSubdomain(v) {
			what := "a Secret's name in Flux's namespace"
			if !flux && key != "credentialsSecret" {
				what = "an Argo CD cluster's name or an https:// API server URL"
			}
			errs = append(errs, fielderr.Invalid(p.Child(key), v, "must be %s", what))
		}
	}
	if e := s.ExternalSecrets; e != nil {
		ep := p.Child("externalSecrets")
		if e.Store == "" || !fielderr.DNSSubdomain(e.Store) {
			errs = append(errs, fielderr.Invalid(ep.Child("store"), e.Store, "required: the name of the platform's SecretStore or ClusterSecretStore"))
		}
		if e.StoreKind != "" {
			errs = append(errs, fielderr.OneOf(ep.Child("storeKind"), e.StoreKind, StoreKinds)...)
		}
		if e.RefreshInterval != "" {
			if _, err := time.ParseDuration(e.RefreshInterval); err != nil {
				errs = append(errs, fielderr.Invalid(ep.Child("refreshInterval"), e.RefreshInterval, "must be a duration such as 1h"))
			}
		}
	}
	return errs
}

// DefaultHosts are the git hosts a platform repository may be on unless
// allowedHosts says.
var DefaultHosts = []string{"github.com"}

// validateRepo: the platform repository is reached over https or ssh (a
// plain http clone can be changed on the way, and the publish step's
// token would travel in the clear), carries no credentials (they would
// land in the render, the Applications and every log), and is on a host
// the stack allows.
func (s Spec) validateRepo(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	hosts := s.AllowedHosts
	if len(hosts) == 0 {
		hosts = DefaultHosts
	}
	for i, h := range s.AllowedHosts {
		if !fielderr.DNSSubdomain(h) || !strings.Contains(h, ".") {
			errs = append(errs, fielderr.Invalid(p.Child("allowedHosts").Index(i), h, "must be a git host's DNS name, such as github.com"))
		}
	}
	u, err := url.Parse(s.RepoURL)
	switch {
	case s.RepoURL == "" || err != nil || u.Host == "":
		errs = append(errs, fielderr.Invalid(p.Child("repoURL"), s.RepoURL, "required: the platform repository, an https:// or ssh:// URL"))
	case u.Scheme != "https" && u.Scheme != "ssh":
		errs = append(errs, fielderr.Invalid(p.Child("repoURL"), s.RepoURL, "must be https://<host>/<owner>/<repo> or ssh://git@<host>/<owner>/<repo>: over %s the clone can be changed on the way", u.Scheme))
	case u.User != nil && (u.Scheme == "https" || hasPassword(u)):
		errs = append(errs, fielderr.Invalid(p.Child("repoURL"), "(a URL with credentials)", "must not carry credentials: give the tool its own (credentialsSecret, Argo CD's repository credentials)"))
	case !slices.Contains(hosts, u.Hostname()):
		errs = append(errs, fielderr.Invalid(p.Child("repoURL"), s.RepoURL, "must be on an allowed host (%s): %s, or add the host to %s",
			p.Child("allowedHosts"), strings.Join(hosts, ", "), p.Child("allowedHosts")))
	case u.RawQuery != "" || u.Fragment != "":
		errs = append(errs, fielderr.Invalid(p.Child("repoURL"), s.RepoURL, "must be a repository's URL, without a query or fragment"))
	}
	return errs
}

func hasPassword(u *url.URL) bool { _, set := u.User.Password(); return set }

// Defaults fills what the block leaves out; stack names the default key
// prefix of the secrets.
func (s Spec) Defaults(stack string) Spec {
	if s.Tool == "" {
		s.Tool = ArgoCD
	}
	if s.TargetRevision == "" {
		s.TargetRevision = DefaultRevision
	}
	if s.Namespace == "" {
		s.Namespace = DefaultNamespace(s.Tool)
	}
	s.Path = strings.Trim(s.Path, "/")
	if s.Tool == ArgoCD {
		if s.Project == "" {
			s.Project = DefaultProject
		}
		if s.WorkloadCluster == "" {
			s.WorkloadCluster = DefaultServer
		}
		if s.ManagementCluster == "" {
			s.ManagementCluster = DefaultServer
		}
	} else {
		if s.Interval == "" {
			s.Interval = DefaultInterval
		}
		if s.Timeout == "" {
			s.Timeout = DefaultTimeout
		}
	}
	if s.ExternalSecrets != nil {
		e := *s.ExternalSecrets
		if e.StoreKind == "" {
			e.StoreKind = defaultStoreKind
		}
		if e.KeyPrefix == "" {
			e.KeyPrefix = "gpu-node-pools/" + stack
		}
		e.KeyPrefix = strings.Trim(e.KeyPrefix, "/")
		if e.RefreshInterval == "" {
			e.RefreshInterval = DefaultRefresh
		}
		s.ExternalSecrets = &e
	}
	return s
}
