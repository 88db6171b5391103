package preflight

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"

	"github.com/natron/gpu-node-pools/stacks/stackfile"
)

// The development passphrase is documented in the README: only the dev
// stack, whose file holds no customer secret, may use it.
const (
	DevStack      = "dev"
	DevPassphrase = "gpu-node-pools-dev"
)

// setPassphrase is what to do instead, for the messages below.
const setPassphrase = "export PULUMI_CONFIG_PASSPHRASE='<this customer's own passphrase>' (kept in the team's vault), " +
	"or for production a KMS secrets provider: pulumi stack init <stack> --secrets-provider 'azurekeyvault://<vault>.vault.azure.net/keys/<key>'"

// Passphrase are the problems of a stack's secrets encryption before the
// engine creates or opens the stack: any stack but dev must have a
// passphrase of its own (or a KMS secrets provider), never the
// development one, and its file's salt must not be one the development
// passphrase made (a dev file copied under a customer's name). env reads
// the environment.
func Passphrase(f *stackfile.File, env func(string) string) []string {
	if f.Stack == DevStack || (f.SecretsProvider != "" && f.SecretsProvider != "passphrase") {
		return nil
	}
	var out []string
	phrase, file := env("PULUMI_CONFIG_PASSPHRASE"), env("PULUMI_CONFIG_PASSPHRASE_FILE")
	switch {
	case phrase == "" && file == "":
		out = append(out, fmt.Sprintf("stack %s: no passphrase for its secrets (PULUMI_CONFIG_PASSPHRASE is not set), and only the %s stack may use the development one; %s",
			f.Stack, DevStack, setPassphrase))
	case phrase == DevPassphrase:
		out = append(out, fmt.Sprintf("stack %s: PULUMI_CONFIG_PASSPHRASE is the development passphrase from the README, which anyone can read; only the %s stack may use it; %s",
			f.Stack, DevStack, setPassphrase))
	}
	if f.Salt && SaltOf(f.EncryptionSalt, DevPassphrase) {
		out = append(out, fmt.Sprintf("%s: its encryptionsalt was made with the development passphrase (a copy of another stack's file?); "+
			"remove the encryptionsalt line and every secure: value, then set PULUMI_CONFIG_PASSPHRASE and the secrets again (make stack prints the commands)",
			stackfile.Path("", f.Stack)))
	}
	return out
}

// SaltOf reports whether a stack file's encryptionsalt was made with
// phrase, as the engine checks it (pulumi pkg/v3 secrets/passphrase
// manager.go, symmetricCrypterFromPhraseAndState: "v1:<salt>:<the word
// pulumi encrypted>", the key from the SDK's PBKDF2 derivation).
func SaltOf(state, phrase string) bool {
	parts := strings.SplitN(state, ":", 3)
	if len(parts) != 3 || parts[0] != "v1" {
		return false
	}
	salt, err := base64.StdEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	got, err := config.NewSymmetricCrypterFromPassphrase(phrase, salt).DecryptValue(context.Background(), parts[2])
	return err == nil && got == "pulumi"
}
