package plan

import (
	"slices"
	"strings"

	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/components/vectordb"
	"github.com/natron/gpu-node-pools/internal/fielderr"
	"github.com/natron/gpu-node-pools/internal/images"
)

// pinServing pins the images model serving sets, each by its digest
// where the stack or a publisher gives one: every engine, proxy, download
// and wait container is then made from these.
func (r *resolver) pinServing(o serving.Options) serving.Options {
	pins := r.cfg.Images.Digests
	for _, ref := range []*string{&o.Image, &o.OllamaImage, &o.ProxyImage, &o.RcloneImage, &o.WaitImage} {
		*ref = images.Pin(*ref, pins)
	}
	return o
}

// checkPins: every pin names an image the stack runs (a pin of anything
// else is a typo that would leave the image unpinned), and every image the
// stack's config sets names one version.
func (r *resolver) checkPins(p *Stack) {
	var refs []string
	for _, img := range p.Images {
		refs = append(refs, img.Ref)
	}
	if p.VectorDBs != nil { // outside the registry policy's scope, pinned all the same
		for _, s := range p.VectorDBs.Specs {
			if s.Kind == vectordb.PGVector {
				refs = append(refs, s.Image)
			}
		}
	}
	var run []string
	for _, ref := range refs {
		repo, tag, _ := images.Split(ref)
		run = append(run, repo+":"+tag)
	}
	pinsAt := key("images").Child("digests")
	for ref := range r.cfg.Images.Digests {
		if !slices.Contains(run, ref) && !r.reported(pinsAt.Key(ref)) {
			slices.Sort(run)
			r.add(fielderr.Invalid(pinsAt.Key(ref), ref, "names no image this stack runs; it runs: %s", strings.Join(slices.Compact(run), ", ")))
		}
	}
	o := r.cfg.Serving
	for _, img := range []struct{ key, ref string }{{"image", o.Image}, {"ollamaImage", o.OllamaImage}, {"proxyImage", o.ProxyImage}} {
		if img.ref != "" && !images.Exact(img.ref) {
			r.add(fielderr.Invalid(key("serving").Child(img.key), img.ref,
				"must name one version: a tag with a full version (such as v0.14.1 or 2.11.9-alpine) or a digest; a tag like latest or 0.14 moves as releases come"))
		}
	}
}
