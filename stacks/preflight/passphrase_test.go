package preflight_test

import (
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/stacks/preflight"
	"github.com/natron/gpu-node-pools/stacks/stackfile"
)

// devSalt is Pulumi.dev.yaml's encryptionsalt, which the engine made with
// the development passphrase.
const devSalt = "v1:68QE3ggNWB8=:v1:6BigIFKvVmM9N1aW:QALPGspUsf9jwt6FEAqbNImTLwYe1g=="

func TestSaltOfIsTheEnginesCheck(t *testing.T) {
	t.Parallel()
	if !preflight.SaltOf(devSalt, preflight.DevPassphrase) {
		t.Error("the dev stack's salt does not match the development passphrase")
	}
	if preflight.SaltOf(devSalt, "acme-own-passphrase") || preflight.SaltOf("v1:garbage", preflight.DevPassphrase) {
		t.Error("a salt matched another passphrase, or a malformed one matched")
	}
}

// Only dev may use the development passphrase; every other stack needs
// its own or a KMS provider, and a dev file copied under another name is
// seen by its salt.
func TestOnlyDevUsesTheDevelopmentPassphrase(t *testing.T) {
	t.Parallel()
	env := func(vars ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(vars); i += 2 {
				if vars[i] == k {
					return vars[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name string
		f    stackfile.File
		env  func(string) string
		want []string
	}{
		{"dev with nothing set", stackfile.File{Stack: "dev", Salt: true, EncryptionSalt: devSalt}, env(), nil},
		{"a new stack with no passphrase", stackfile.File{Stack: "beta"}, env(), []string{"stack beta: no passphrase for its secrets (PULUMI_CONFIG_PASSPHRASE is not set)"}},
		{"a new stack with the development passphrase", stackfile.File{Stack: "beta"}, env("PULUMI_CONFIG_PASSPHRASE", preflight.DevPassphrase),
			[]string{"stack beta: PULUMI_CONFIG_PASSPHRASE is the development passphrase"}},
		{"its own passphrase", stackfile.File{Stack: "beta"}, env("PULUMI_CONFIG_PASSPHRASE", "acme-own-passphrase"), nil},
		{"a passphrase file", stackfile.File{Stack: "beta"}, env("PULUMI_CONFIG_PASSPHRASE_FILE", "/run/secrets/acme"), nil},
		{"the dev file copied", stackfile.File{Stack: "beta", Salt: true, EncryptionSalt: devSalt}, env("PULUMI_CONFIG_PASSPHRASE", "acme-own-passphrase"),
			[]string{"Pulumi.beta.yaml: its encryptionsalt was made with the development passphrase"}},
		{"a KMS provider", stackfile.File{Stack: "prod", SecretsProvider: "azurekeyvault://acme.vault.azure.net/keys/pulumi"}, env(), nil},
	} {
		got := preflight.Passphrase(&tc.f, tc.env)
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], tc.want[i]) || !strings.Contains(got[i], "export PULUMI_CONFIG_PASSPHRASE=") && !strings.Contains(got[i], "make stack") {
				t.Errorf("%s: got %q, want %q with the command to fix it", tc.name, got[i], tc.want[i])
			}
		}
	}
}
