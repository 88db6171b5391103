// Package images is how the program names the images it sets itself:
// each by an exact version, and by its digest wherever one is published,
// so that what runs is what was reviewed, whatever the registry later
// serves under the tag. A stack may pin its own digests (imageDigests).
package images

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fielderr"
)

// Published is a digest as it was found published, and where: registries
// cannot be reached from the machines that build this project, so each
// digest comes from a public source that pins it, named here.
type Published struct {
	Digest, Source string
}

// Digests are the published digests of the images the program sets by
// default, by repository:tag. An image left out has no digest published
// that could be sourced (docs/security.md lists each, and why).
var Digests = map[string]Published{
	"vllm/vllm-openai:v0.14.1": {"sha256:6bf34e50e2387dc46dc87a9d6a945fdd616a022bccfddd949052f54063ebcb8c",
		"three public Dockerfiles that build on it (FROM vllm/vllm-openai:v0.14.1@sha256:6bf34e50..., a VibeVoice ASR deployment)"},
	"rclone/rclone:1.75.1": {"sha256:45401ad7410db1d67ffdb58e19059ad20b0d8e0285a60e38bbec55cc1019c7a5",
		"a public Dockerfile \"rclone pinned by version and digest\" (FROM rclone/rclone:1.75.1@sha256:45401ad7...)"},
	"ollama/ollama:0.32.15": {"sha256:57d60e686821ea81a7748a3ec8141308c8b8f95b27105713954abf7a6529e700",
		"a public deployment's table of pinned images (OLLAMA_IMAGE ollama/ollama:0.32.15, sha256:57d60e68...)"},
	"ghcr.io/cloudnative-pg/postgresql:17.11-202608310816-system-bookworm": {"sha256:d0e93a6fb034e97067733ea2febe701dd97a070011c82d5fdabe99ca84b1f3d4",
		"a public CloudNativePG Cluster manifest (imageName ghcr.io/cloudnative-pg/postgresql:17.11-202608310816-system-bookworm@sha256:d0e93a6f...)"},
}

var (
	digestRe = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	// a full version: major.minor.patch, a v before it and a variant
	// after it allowed (v0.14.1, 1.37.0, 2.11.9-alpine,
	// 17.11-202608310816-system-bookworm: PostgreSQL's minor and the
	// build's timestamp)
	exactTagRe = regexp.MustCompile(`^v?[0-9]+\.[0-9]+(\.[0-9]+|-[0-9]{12})([-+][0-9A-Za-z.-]+)?$`)
)

// Split is an image reference's repository, tag and digest ("" where
// it has none).
func Split(ref string) (repo, tag, digest string) {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref, digest = ref[:i], ref[i+1:]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i], ref[i+1:], digest
	}
	return ref, "", digest
}

// ValidDigest reports whether d is a sha256 digest.
func ValidDigest(d string) bool { return digestRe.MatchString(d) }

// Exact reports whether ref names one image: by digest, or by a tag that
// names a full version (latest, 1.68 or v0.14 move as releases come).
func Exact(ref string) bool {
	_, tag, digest := Split(ref)
	if digest != "" {
		return ValidDigest(digest)
	}
	return exactTagRe.MatchString(tag)
}

// Pin is ref with its digest: the stack's own (pins, by repository:tag)
// first, else the published one; a ref that has a digest keeps it.
func Pin(ref string, pins map[string]string) string {
	if _, _, digest := Split(ref); digest != "" {
		return ref
	}
	if d, ok := pins[ref]; ok {
		return ref + "@" + d
	}
	if p, ok := Digests[ref]; ok {
		return ref + "@" + p.Digest
	}
	return ref
}

// Spec is the images block (gpu-node-pools:images): the stack's own pins
// of the images the program sets.
type Spec struct {
	// Digests pin images the program sets, by the repository:tag it sets
	// them by (the stack's serving.image, say, or a default such as
	// caddy:2.11.9-alpine), to a digest the customer has checked
	// (sha256:<64 hex digits>); they win over the published digests
	// the program carries.
	Digests map[string]string `json:"digests,omitempty"`
}

// Validate checks the block as written: each key an exact image, each
// value a digest. Whether the stack runs the image is the plan's to say.
func (s Spec) Validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, ref := range slices.Sorted(maps.Keys(s.Digests)) {
		kp := p.Child("digests").Key(ref)
		if _, tag, digest := Split(ref); digest != "" || !Exact(ref) || tag == "" {
			errs = append(errs, fielderr.Invalid(kp, ref, "must be an image as the program sets it, repository:tag with a full version (such as vllm/vllm-openai:v0.14.1), without a digest"))
		}
		if d := s.Digests[ref]; !ValidDigest(d) {
			errs = append(errs, fielderr.Invalid(kp, d, "must be a digest, sha256: and 64 lowercase hex digits (docker buildx imagetools inspect %s)", ref))
		}
	}
	return errs
}
