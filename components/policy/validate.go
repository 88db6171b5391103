package policy

import (
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
)

// registryRe is a registry host (with a dot, a port or localhost) and an
// optional path: what an image reference starts with.
var registryRe = regexp.MustCompile(`^([a-z0-9-]+(\.[a-z0-9-]+)+(:[0-9]+)?|localhost(:[0-9]+)?|[a-z0-9-]+:[0-9]+)(/[a-z0-9._-]+)*/?$`)

// Validate checks the policies block as written.
func (s Spec) Validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	action := func(p *field.Path, a Action) {
		if a != "" {
			errs = append(errs, fielderr.OneOf(p, a, Actions)...)
		}
	}
	action(p.Child("action"), s.Action)
	action(p.Child("requireResources", "action"), s.RequireResources.Action)
	action(p.Child("allowedRegistries", "action"), s.AllowedRegistries.Action)
	action(p.Child("disallowPrivileged", "action"), s.DisallowPrivileged.Action)
	action(p.Child("gpuTaint", "action"), s.GPUTaint.Action)
	for i, r := range s.AllowedRegistries.Registries {
		if !registryRe.MatchString(r) {
			errs = append(errs, fielderr.Invalid(p.Child("allowedRegistries", "registries").Index(i), r,
				"must be a registry host with an optional path, such as nvcr.io or docker.io/vllm (images without a host are docker.io's)"))
		}
	}
	for i, o := range s.AllowedRegistries.OperatorOwners {
		if !ownerRe.MatchString(o) {
			errs = append(errs, fielderr.Invalid(p.Child("allowedRegistries", "operatorOwners").Index(i), o,
				"must be an API group and a kind, such as acme.cert-manager.io/Challenge (a core or apps kind is never an operator's)"))
		}
	}
	// A list, not a map: problems come out in the same order every run.
	for _, e := range []struct {
		name string
		list []string
	}{{"disallowPrivileged", s.DisallowPrivileged.ExemptNamespaces}, {"gpuTaint", s.GPUTaint.ExemptNamespaces}} {
		for i, ns := range e.list {
			if !fielderr.DNSLabel(ns) {
				errs = append(errs, fielderr.Invalid(p.Child(e.name, "exemptNamespaces").Index(i), ns, "must be a namespace name (a DNS label)"))
			}
		}
	}
	return errs
}

// ownerRe is a custom resource's group (with a dot: the core, apps and
// batch groups have none) and kind.
var ownerRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+/[A-Z][A-Za-z0-9]*$`)

// Image is an image the stack runs itself, with what runs it.
type Image struct {
	Ref string
	By  string
}

// CheckImages reports each of the stack's own images the registry policy
// would refuse: a stack must not lock out its own device plugin or model
// servers. p is the registries' key path.
func (r Resolved) CheckImages(p *field.Path, images []Image) field.ErrorList {
	if !r.On() || !r.AllowedRegistries.On() {
		return nil
	}
	regs := r.AllowedRegistries.Registries
	var errs field.ErrorList
	for _, img := range images {
		if !Allows(regs, img.Ref) {
			errs = append(errs, fielderr.Invalid(p, img.Ref, "must allow %s, which %s runs (allowed: %s)",
				NormalizeImage(img.Ref), img.By, strings.Join(regs, ", ")))
		}
	}
	return errs
}
