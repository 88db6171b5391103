package plan_test

import (
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/images"
	"github.com/natron/gpu-node-pools/internal/testkit/stacktest"
	"github.com/natron/gpu-node-pools/stacks/plan"
)

// Every image the program sets on the project's stacks names one
// version, and carries the published digest wherever one is on record;
// the charts' own images are the charts' (pinned by the chart version).
func TestProgramImagesAreExactAndPinned(t *testing.T) {
	t.Parallel()
	for _, stack := range []string{"dev", "prod"} {
		p, err := plan.Resolve(stacktest.Config(t, stack), stack)
		if err != nil {
			t.Fatal(err)
		}
		refs := []string{}
		for _, img := range p.Images {
			if strings.Contains(img.Ref, ":") { // a chart's images are repositories only
				refs = append(refs, img.Ref)
			}
		}
		if p.VectorDBs != nil {
			for _, s := range p.VectorDBs.Specs {
				refs = append(refs, s.Image)
			}
		}
		if len(refs) < 5 {
			t.Fatalf("%s: only %d images set by the program: %v", stack, len(refs), refs)
		}
		for _, ref := range refs {
			if strings.HasPrefix(ref, "registry.") { // the customer's batch images
				continue
			}
			if !images.Exact(ref) {
				t.Errorf("%s: %s moves: no full version, no digest", stack, ref)
			}
			repo, tag, digest := images.Split(ref)
			if pub, ok := images.Digests[repo+":"+tag]; ok && digest != pub.Digest {
				t.Errorf("%s: %s lacks its published digest %s", stack, ref, pub.Digest)
			}
		}
	}
}

// A stack's pins win, name an image the stack runs, and its own images
// name one version.
func TestImagePinsAndVersions(t *testing.T) {
	t.Parallel()
	const mine = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	c := stacktest.ServingNatron()
	c["images"] = map[string]any{"digests": map[string]any{"caddy:2.11.9-alpine": mine}}
	p, err := plan.Load(stacktest.Encode(t, c), "test")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.ServingOptions.ProxyImage; got != "caddy:2.11.9-alpine@"+mine {
		t.Errorf("the proxy runs %s, want the stack's pin", got)
	}
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"a floating vLLM tag", func(c map[string]any) { c["serving"] = map[string]any{"image": "vllm/vllm-openai:latest"} },
			"gpu-node-pools:serving.image: must name one version"},
		{"a minor-only proxy tag", func(c map[string]any) { c["serving"] = map[string]any{"proxyImage": "caddy:2.11"} },
			"gpu-node-pools:serving.proxyImage: must name one version"},
		{"a pin of an image the stack does not run", func(c map[string]any) {
			c["images"] = map[string]any{"digests": map[string]any{"caddy:2.10.0": mine}}
		}, "gpu-node-pools:images.digests[caddy:2.10.0]: names no image this stack runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := stacktest.ServingNatron()
			tc.edit(c)
			if _, err := plan.Load(stacktest.Encode(t, c), "test"); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	// a serving image given with a digest of its own is taken as it is
	c = stacktest.ServingNatron()
	c["serving"] = map[string]any{"image": "vllm/vllm-openai@" + mine}
	if p, err := plan.Load(stacktest.Encode(t, c), "test"); err != nil || p.ServingOptions.Image != "vllm/vllm-openai@"+mine {
		t.Errorf("image by digest: %v, %v", err, p)
	}
}
