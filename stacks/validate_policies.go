package stacks

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/natron/gpu-node-pools/components/catalog"
	"github.com/natron/gpu-node-pools/components/platform"
	"github.com/natron/gpu-node-pools/components/policy"
	"github.com/natron/gpu-node-pools/components/serving"
)

// registryRe is a registry host (with a dot, a port or localhost) and an
// optional path: what an image reference starts with.
var registryRe = regexp.MustCompile(`^([a-z0-9-]+(\.[a-z0-9-]+)+(:[0-9]+)?|localhost(:[0-9]+)?|[a-z0-9-]+:[0-9]+)(/[a-z0-9._-]+)*/?$`)

// validatePolicies checks gpu-node-pools:policies, and that the registry
// policy would admit every image the stack itself runs: a stack must not
// lock out its own device plugin or model servers.
func validatePolicies(ps *problems, cfg *Config, skip map[string]bool) {
	s := cfg.Policies
	p := func(k string) string { return key("policies." + k) }
	action := func(path string, a policy.Action) {
		if a != "" && !slices.Contains(policy.Actions, a) {
			ps.add(path, "must be one of Enforce, Audit, got %q", a)
		}
	}
	action(p("action"), s.Action)
	action(p("requireResources.action"), s.RequireResources.Action)
	action(p("allowedRegistries.action"), s.AllowedRegistries.Action)
	action(p("disallowPrivileged.action"), s.DisallowPrivileged.Action)
	action(p("gpuTaint.action"), s.GPUTaint.Action)
	for i, r := range s.AllowedRegistries.Registries {
		if !registryRe.MatchString(r) {
			ps.add(p(fmt.Sprintf("allowedRegistries.registries[%d]", i)),
				"must be a registry host with an optional path, such as nvcr.io or docker.io/vllm (images without a host are docker.io's), got %q", r)
		}
	}
	// A list, not a map: problems come out in the same order every run.
	for _, e := range []struct {
		name string
		list []string
	}{{"disallowPrivileged", s.DisallowPrivileged.ExemptNamespaces}, {"gpuTaint", s.GPUTaint.ExemptNamespaces}} {
		for i, ns := range e.list {
			if !dnsLabelRe.MatchString(ns) {
				ps.add(p(fmt.Sprintf("%s.exemptNamespaces[%d]", e.name, i)), "must be a namespace name (a DNS label), got %q", ns)
			}
		}
	}
	if !s.On() || !s.AllowedRegistries.On() || skip["platform"] || skip["serving"] || skip["batchJobs"] {
		return
	}
	regs := cfg.ResolvedPolicies().AllowedRegistries.Registries
	for _, img := range ownImages(cfg) {
		if !policy.Allows(regs, img.image) {
			ps.add(p("allowedRegistries.registries"), "must allow %s, which %s runs (allowed: %s), got %q",
				policy.NormalizeImage(img.image), img.by, strings.Join(regs, ", "), img.image)
		}
	}
}

type ownImage struct{ image, by string }

// ownImages are the images the stack runs, with what runs them.
func ownImages(cfg *Config) []ownImage {
	onAKS := cfg.Target == catalog.AKS
	var out []ownImage
	stack := cfg.Platform.Defaults(onAKS).GPUStack
	for _, repo := range platform.ChartImages(stack) {
		out = append(out, ownImage{repo, "the " + string(stack) + " platform layer"})
	}
	if len(cfg.Models) > 0 {
		out = append(out,
			ownImage{cfg.Serving.Defaults(onAKS).Image, key("serving.image")},
			ownImage{serving.RcloneImage, "the weight download Job"},
			ownImage{serving.WaitImage, "the model servers' wait-for-weights init container"})
	}
	for i, j := range cfg.BatchJobs {
		if j.Image != "" {
			out = append(out, ownImage{j.Image, key(fmt.Sprintf("batchJobs[%d].image", i))})
		}
	}
	return out
}
