package serving

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// KeyHashAnnotation on a pod template names the keys its proxy was
// started with (it reads them once, from its environment): a changed key
// changes the template, and the Deployment rolls its pods onto it.
const KeyHashAnnotation = "gpu-node-pools/api-key-sha256"

// KeyHash is the SHA-256 of keys, domain-separated, in hex: the keys
// themselves never leave their Secret. The hash is not a secret (keys are
// random and at least MinKeyLength long), so that a render's files and a
// preview's diff show it without a secret in plain text.
func KeyHash(keys ...pulumi.StringOutput) pulumi.StringOutput {
	in := make([]any, len(keys))
	for i, k := range keys {
		in[i] = k
	}
	hash := pulumi.All(in...).ApplyT(func(v []any) string {
		var parts []string
		for _, k := range v {
			parts = append(parts, k.(string))
		}
		return HashKeys(parts...)
	})
	return pulumi.Unsecret(hash).(pulumi.StringOutput)
}

// HashKeys is KeyHash on plain keys.
func HashKeys(keys ...string) string {
	sum := sha256.Sum256([]byte("gpu-node-pools api keys\x00" + strings.Join(keys, "\x00")))
	return hex.EncodeToString(sum[:])
}

// RollOnKeyChange is a transform of a chart whose Deployment runs a
// proxy holding keys: its pod template carries their hash.
func RollOnKeyChange(hash pulumi.StringOutput) pulumi.ResourceTransform {
	return func(_ context.Context, a *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
		if a.Type != "kubernetes:apps/v1:Deployment" {
			return nil
		}
		props, ok := withTemplateAnnotation(a.Props, KeyHashAnnotation, hash)
		if !ok {
			return nil
		}
		return &pulumi.ResourceTransformResult{Props: props, Opts: a.Opts}
	}
}

// withTemplateAnnotation is a Deployment's inputs with an annotation on
// its pod template, and whether it had a template.
func withTemplateAnnotation(props pulumi.Map, key string, value pulumi.StringInput) (pulumi.Map, bool) {
	spec, ok := props["spec"].(pulumi.Map)
	if !ok {
		return props, false
	}
	tmpl, ok := spec["template"].(pulumi.Map)
	if !ok {
		return props, false
	}
	meta, _ := tmpl["metadata"].(pulumi.Map)
	meta = maps.Clone(meta)
	if meta == nil {
		meta = pulumi.Map{}
	}
	ann := pulumi.Map{}
	switch a := meta["annotations"].(type) {
	case pulumi.Map:
		ann = maps.Clone(a)
	case pulumi.StringMap:
		for k, v := range a {
			ann[k] = v
		}
	}
	ann[key] = value
	meta["annotations"] = ann
	tmpl, spec, props = maps.Clone(tmpl), maps.Clone(spec), maps.Clone(props)
	tmpl["metadata"], spec["template"], props["spec"] = meta, tmpl, spec
	return props, true
}
