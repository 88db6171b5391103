// Package policy holds the Kyverno ClusterPolicies that keep GPU nodes for
// GPU work: GPU pods declare their resources, pull only from allowed
// registries and run unprivileged; pods that request a GPU get the GPU
// toleration, and pods that tolerate the GPU taint must request a GPU.
// Kyverno itself belongs to the customer's platform; we only add policies.
package policy

import (
	"slices"
	"strings"
)

// Action is what Kyverno does with a pod that fails a validation rule.
type Action string

const (
	// Enforce rejects the pod at admission.
	Enforce Action = "Enforce"
	// Audit admits it and records the violation in a policy report.
	Audit Action = "Audit"
)

// Actions lists the valid actions.
var Actions = []Action{Enforce, Audit}

// Toggle switches one policy and sets its action. Both are optional.
type Toggle struct {
	// Enabled switches the policy on or off.
	// Default: true.
	Enabled *bool `json:"enabled,omitempty"`
	// Action is Enforce or Audit.
	// Default: the block's action.
	Action Action `json:"action,omitempty"`
}

// On reports whether the policy is enabled.
func (t Toggle) On() bool { return t.Enabled == nil || *t.Enabled }

// Spec is the policies block of the stack config (gpu-node-pools:policies).
type Spec struct {
	// Enabled switches every policy off at once (a cluster without Kyverno).
	// Default: true.
	Enabled *bool `json:"enabled,omitempty"`
	// Action is the default action of the validation rules: Enforce or
	// Audit.
	// Default: Enforce.
	Action Action `json:"action,omitempty"`
	// RequireResources: every container of a GPU pod declares cpu and
	// memory requests and a memory limit.
	RequireResources ResourcesPolicy `json:"requireResources,omitempty"`
	// AllowedRegistries: GPU pods, and every pod in the platform and
	// serving namespaces, pull images only from these registries.
	AllowedRegistries RegistriesPolicy `json:"allowedRegistries,omitempty"`
	// DisallowPrivileged: GPU pods run no privileged container, except in
	// the platform namespace (the GPU operator's DaemonSets need it).
	DisallowPrivileged ExemptionsPolicy `json:"disallowPrivileged,omitempty"`
	// GPUTaint: pods requesting a GPU get the GPU toleration; pods that
	// tolerate the GPU taint without requesting a GPU are rejected.
	GPUTaint ExemptionsPolicy `json:"gpuTaint,omitempty"`
}

// ResourcesPolicy configures RequireResources.
type ResourcesPolicy struct {
	Toggle
	// RequireCPULimit also demands a cpu limit. Off by default: a CPU limit
	// throttles the tokenizer and scheduler threads of an inference server.
	// Default: false.
	RequireCPULimit bool `json:"requireCpuLimit,omitempty"`
}

// RegistriesPolicy configures AllowedRegistries.
type RegistriesPolicy struct {
	Toggle
	// Registries are image prefixes: a registry host (nvcr.io) or a host and
	// path (docker.io/vllm). Images without a host are docker.io's.
	// Default: nvcr.io, registry.k8s.io, docker.io/vllm, docker.io/rclone,
	// docker.io/library/busybox, docker.io/library/caddy and the images
	// the stack runs.
	Registries []string `json:"registries,omitempty"`
	// OperatorOwners are the operators' kinds (group/Kind) whose pods in
	// the platform, serving and batch namespaces are their operator's
	// business, not this policy's: owner references are not
	// authenticated, so only the kinds named here are trusted.
	// Default: acme.cert-manager.io/Challenge.
	OperatorOwners []string `json:"operatorOwners,omitempty"`
}

// DefaultOperatorOwners are the operators that make pods in the
// program's namespaces: cert-manager's HTTP-01 solver, made for a
// Challenge in the namespace of a model's Ingress
// (pkg/issuer/acme/http/pod.go, cert-manager v1.21.1).
var DefaultOperatorOwners = []string{"acme.cert-manager.io/Challenge"}

// ExemptionsPolicy configures a policy that some namespaces are exempt from.
type ExemptionsPolicy struct {
	Toggle
	// ExemptNamespaces are exempt besides kube-system and the platform
	// namespace, which always are.
	ExemptNamespaces []string `json:"exemptNamespaces,omitempty"`
}

// DefaultRegistries are where the program's own images come from: the NVIDIA
// charts (nvcr.io, and registry.k8s.io for node feature discovery), vLLM,
// the rclone weight downloader, the busybox wait container and the Caddy
// API-key proxy.
var DefaultRegistries = []string{"nvcr.io", "registry.k8s.io", "docker.io/vllm", "docker.io/rclone", "docker.io/library/busybox", "docker.io/library/caddy"}

// Scope is where the policies apply, from the rest of the stack config.
type Scope struct {
	// PlatformNamespace holds the GPU DaemonSets.
	PlatformNamespace string
	// ServingNamespace holds the model servers, BatchNamespace the batch
	// jobs.
	ServingNamespace, BatchNamespace string
	// CPUOnlyNamespaces hold what never runs on GPU nodes (the vector
	// databases).
	CPUOnlyNamespaces []string
}

// Resolved is a Spec with its defaults filled and its scope known: what the
// policy builders read.
type Resolved struct {
	Spec
	Scope
}

// On reports whether the policies are installed at all.
func (s Spec) On() bool { return s.Enabled == nil || *s.Enabled }

// Resolve fills the defaults.
func (s Spec) Resolve(scope Scope) Resolved {
	if s.Action == "" {
		s.Action = Enforce
	}
	for _, t := range []*Toggle{&s.RequireResources.Toggle, &s.AllowedRegistries.Toggle, &s.DisallowPrivileged.Toggle, &s.GPUTaint.Toggle} {
		if t.Action == "" {
			t.Action = s.Action
		}
	}
	if len(s.AllowedRegistries.Registries) == 0 {
		s.AllowedRegistries.Registries = DefaultRegistries
	}
	if len(s.AllowedRegistries.OperatorOwners) == 0 {
		s.AllowedRegistries.OperatorOwners = DefaultOperatorOwners
	}
	return Resolved{Spec: s, Scope: scope}
}

// exempt is kube-system, the platform namespace and the configured ones,
// sorted and without duplicates.
func (r Resolved) exempt(extra []string) []string {
	ns := append([]string{"kube-system", r.PlatformNamespace}, extra...)
	slices.Sort(ns)
	return slices.Compact(ns)
}

// NormalizeImage gives an image reference its registry host the way the
// container runtime does: "vllm/vllm-openai:v1" is
// "docker.io/vllm/vllm-openai:v1", "busybox" is "docker.io/library/busybox".
func NormalizeImage(image string) string {
	first, _, found := strings.Cut(image, "/")
	if !found {
		return "docker.io/library/" + image
	}
	if strings.ContainsAny(first, ".:") || first == "localhost" {
		return image
	}
	return "docker.io/" + image
}

// Allows reports whether an image comes from one of the registries: the
// normalised image is one of them or starts with one followed by "/", ":"
// or "@".
func Allows(registries []string, image string) bool {
	img := NormalizeImage(image)
	for _, r := range registries {
		r = strings.TrimSuffix(r, "/")
		if rest, ok := strings.CutPrefix(img, r); ok && (rest == "" || strings.ContainsRune("/:@", rune(rest[0]))) {
			return true
		}
	}
	return false
}
