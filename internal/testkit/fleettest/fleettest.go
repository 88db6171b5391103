// Package fleettest makes fleets of customer stack files for the fleet
// tests and benchmarks: varied pools, models and waves, each stack with
// its own passphrase and real secure values, as `pulumi config set
// --secret` writes them.
package fleettest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"

	"github.com/natron/gpu-node-pools/stacks/automation"
	"github.com/natron/gpu-node-pools/stacks/fleet"
)

// Secrets encrypts values for a stack file with phrase, as the passphrase
// secrets provider does (pulumi pkg/v3 secrets/passphrase manager.go): the
// file's encryptionsalt ("v1:<salt>:<the word pulumi encrypted>") and each
// value's ciphertext.
func Secrets(t testing.TB, phrase string, values ...string) (salt string, secure []string) {
	t.Helper()
	raw := make([]byte, 8)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	c := config.NewSymmetricCrypterFromPassphrase(phrase, raw)
	enc := func(v string) string {
		s, err := c.EncryptValue(context.Background(), v)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, v := range values {
		secure = append(secure, enc(v))
	}
	return "v1:" + base64.StdEncoding.EncodeToString(raw) + ":" + enc("pulumi"), secure
}

// Passphrase is stack's passphrase in these fleets.
func Passphrase(stack string) string { return "fleet-test-" + stack }

// Env is the fleet's passphrases, one per stack, as a fleet job's
// environment gives them (automation.PassphraseEnv).
func Env(stacks []string) map[string]string {
	env := map[string]string{}
	for _, s := range stacks {
		env[automation.PassphraseEnv(s)] = Passphrase(s)
	}
	return env
}

var profiles = []string{"h100-80gb-x8", "a100-80gb-x8", "a100-80gb-x4"}

// StackFile is the i-th customer's stack file: a bare-metal stack that
// renders, with one to three pools of varied profiles and bounds, a vLLM
// model with its weights store on every other stack, its wave (canary for
// the first, then 1-3 in turn) and its secrets under its own passphrase.
func StackFile(t testing.TB, stack string, i int) string {
	t.Helper()
	salt, sec := Secrets(t, Passphrase(stack), "api-key-of-the-fleet-stack-"+stack, "ak-"+stack, "sk-"+stack)
	var b strings.Builder
	fmt.Fprintf(&b, `config:
  gpu-node-pools:target: natron
  gpu-node-pools:renderDir: rendered/%s
  gpu-node-pools:natron:
    site: natron-cloud
    clusterName: %s
    namespace: capi-%s
    kubernetesVersion: v1.33.4
    image: {url: "https://images.example/u.qcow2", checksum: "https://images.example/u.qcow2.sha256sum"}
  gpu-node-pools:fleet: {wave: "%s"}
  gpu-node-pools:serving:
    apiKey: {secure: %s}
  gpu-node-pools:pools:
`, stack, stack, stack, fleet.Waves()[i%len(fleet.Waves())], sec[0])
	for p := range 1 + i%3 {
		fmt.Fprintf(&b, "    - {name: pool%d, sku: %s, minNodes: 0, maxNodes: %d}\n", p, profiles[(i+p)%len(profiles)], 1+(i+p)%4)
	}
	fmt.Fprintf(&b, "  gpu-node-pools:pricing: {prices: {h100-80gb-x8: 19.5, a100-80gb-x8: 11, a100-80gb-x4: 5.8}}\n")
	if i%2 == 0 {
		fmt.Fprintf(&b, `  gpu-node-pools:storage:
    kind: s3
    endpoint: https://s3.natron-cloud.example
    accessKey: {secure: %s}
    secretKey: {secure: %s}
  gpu-node-pools:models:
    - {name: llama3-8b, pool: pool0, source: "s3://models/llama3-8b", model: llama-3.1-8b, minReplicas: %d}
`, sec[1], sec[2], i%2)
	}
	fmt.Fprintf(&b, "encryptionsalt: %s\n", salt)
	return b.String()
}

// Names are n stack names, customer000 on.
func Names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("customer%03d", i)
	}
	return out
}

// Files are the stack files of the named stacks, as stacktest.Project
// takes them.
func Files(t testing.TB, names []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i, n := range names {
		out[n] = StackFile(t, n, i)
	}
	return out
}
