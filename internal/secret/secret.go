// Package secret holds config values that must stay Pulumi secrets end to
// end: kubeconfigs, storage keys, API keys.
package secret

import "github.com/pulumi/pulumi/sdk/v3/go/pulumi"

// Secret is a config value that must stay a Pulumi secret. It never prints,
// so a config logged by mistake does not leak it.
type Secret string

func (Secret) String() string   { return "[secret]" }
func (Secret) GoString() string { return "[secret]" }

// Output is the value as a Pulumi secret, the only form it leaves config in.
func (s Secret) Output() pulumi.StringOutput {
	return pulumi.ToSecret(pulumi.String(string(s))).(pulumi.StringOutput)
}

// External is a Secret a render leaves out (its values would be plain text
// in the files): where it goes, its type, the keys whose values only the
// cluster's secret manager holds, and the values that are not secret (an
// rclone remote's type, pgvector's user name), which the render writes.
type External struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	Type      string            `json:"type,omitempty"`
	Keys      []string          `json:"keys"`
	Values    map[string]string `json:"values,omitempty"`
}
