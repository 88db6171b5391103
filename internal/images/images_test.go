package images_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/images"
)

func TestExact(t *testing.T) {
	t.Parallel()
	for ref, want := range map[string]bool{
		"vllm/vllm-openai:v0.14.1": true, "busybox:1.37.0": true, "caddy:2.11.9-alpine": true,
		"ghcr.io/cloudnative-pg/postgresql:17.11-202608310816-system-bookworm": true,
		"localhost:5000/x:1.2.3": true,
		"busybox@sha256:9db7b59979c38555a39def84a31fb98b5296952f9e3afd4f6f11f05b07adfab0":                  true,
		"vllm/vllm-openai:v0.14.1@sha256:6bf34e50e2387dc46dc87a9d6a945fdd616a022bccfddd949052f54063ebcb8c": true,
		"rclone/rclone:1.68": false, "busybox:1.37": false, "vllm/vllm-openai:latest": false, "vllm/vllm-openai": false,
		"ghcr.io/cloudnative-pg/postgresql:17.11-system-bookworm": false, "localhost:5000/x": false, "x:v0.14": false,
		"busybox@sha256:short": false,
	} {
		if got := images.Exact(ref); got != want {
			t.Errorf("Exact(%q) = %v, want %v", ref, got, want)
		}
	}
}

func TestPin(t *testing.T) {
	t.Parallel()
	const mine = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	for _, tc := range []struct{ ref, want string }{
		{"vllm/vllm-openai:v0.14.1", "vllm/vllm-openai:v0.14.1@" + images.Digests["vllm/vllm-openai:v0.14.1"].Digest},
		{"caddy:2.11.9-alpine", "caddy:2.11.9-alpine@" + mine},
		{"busybox:1.37.0", "busybox:1.37.0"},
		{"x:1.0.0@" + mine, "x:1.0.0@" + mine},
	} {
		if got := images.Pin(tc.ref, map[string]string{"caddy:2.11.9-alpine": mine}); got != tc.want {
			t.Errorf("Pin(%q) = %q, want %q", tc.ref, got, tc.want)
		}
	}
	for ref, p := range images.Digests {
		if !images.Exact(ref) || !images.ValidDigest(p.Digest) || p.Source == "" {
			t.Errorf("published digest of %s: exact %v, digest %q, source %q", ref, images.Exact(ref), p.Digest, p.Source)
		}
	}
}

func TestSpecValidate(t *testing.T) {
	t.Parallel()
	p := field.NewPath("gpu-node-pools:images")
	errs := images.Spec{Digests: map[string]string{
		"caddy:2.11.9-alpine": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
		"caddy:latest":        "sha256:1111111111111111111111111111111111111111111111111111111111111111",
		"busybox:1.37.0":      "md5:abc",
	}}.Validate(p)
	got := errs.ToAggregate().Error()
	for _, want := range []string{`gpu-node-pools:images.digests[caddy:latest]: Invalid value: "caddy:latest": must be an image as the program sets it`,
		`gpu-node-pools:images.digests[busybox:1.37.0]: Invalid value: "md5:abc": must be a digest`} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in %s", want, got)
		}
	}
	if len(errs) != 2 {
		t.Errorf("%d problems, want 2: %v", len(errs), errs)
	}
}
