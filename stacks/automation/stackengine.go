package automation

import (
	"fmt"
	"maps"
	"strings"

	"github.com/natron/gpu-node-pools/stacks/preflight"
	"github.com/natron/gpu-node-pools/stacks/stackfile"
)

// PassphraseEnv is the variable holding one stack's own passphrase in a
// fleet job: PULUMI_CONFIG_PASSPHRASE_<STACK>, the name upper-cased and
// every character but letters and digits made '_' (acme-eu:
// PULUMI_CONFIG_PASSPHRASE_ACME_EU), as a GitHub secret may be named.
func PassphraseEnv(stack string) string {
	return "PULUMI_CONFIG_PASSPHRASE_" + strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, stack)
}

// ForStack is e for one stack of a fleet: the secrets provider its stack
// file names (a key vault: the job's Azure identity decrypts) or else the
// passphrase provider with the stack's own passphrase, PassphraseEnv(stack),
// or the fleet's PULUMI_CONFIG_PASSPHRASE, read with getenv. A stack with
// neither fails alone, naming both.
func (e Engine) ForStack(projectDir, stack string, getenv func(string) string) (Engine, error) {
	f, err := stackfile.Read(projectDir, stack, "secret")
	if err != nil {
		return e, err
	}
	out := e
	out.Env = maps.Clone(e.Env)
	if out.Env == nil {
		out.Env = map[string]string{}
	}
	out.SecretsProvider = f.SecretsProvider
	if f.SecretsProvider != "" && f.SecretsProvider != "passphrase" {
		return out, nil
	}
	out.SecretsProvider = "passphrase"
	for _, k := range []string{PassphraseEnv(stack), "PULUMI_CONFIG_PASSPHRASE"} {
		v := getenv(k)
		if v == "" {
			continue
		}
		// a wrong passphrase is named here, with its variable, not as
		// the engine's "failed to create stack: exit status 1"
		if f.Salt && !preflight.SaltOf(f.EncryptionSalt, v) {
			return out, fmt.Errorf("%s does not decrypt the secrets of %s (its encryptionsalt was made with another passphrase)", k, stackfile.Path("", stack))
		}
		out.Env["PULUMI_CONFIG_PASSPHRASE"] = v
		return out, nil
	}
	if _, ok := e.Env["PULUMI_CONFIG_PASSPHRASE"]; ok {
		return out, nil
	}
	return out, fmt.Errorf("no passphrase: set %s (a secret of the stack's GitHub environment) or PULUMI_CONFIG_PASSPHRASE, or give the stack a key vault (secretsprovider: azurekeyvault://...)", PassphraseEnv(stack))
}
