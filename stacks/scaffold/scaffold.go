// Package scaffold writes a new customer's stack file: commented, for one
// target, with no encryption salt of another stack (the engine adds the
// stack's own when it is created), and says which secrets to set next.
package scaffold

import (
	"bytes"
	"cmp"
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"github.com/natron/gpu-node-pools/stacks/config"
)

// Options are the answers a new stack needs.
type Options struct {
	// Name is the stack's name (the customer).
	Name string
	// Target is aks or natron.
	Target string
	// Cluster is the AKS cluster or the Cluster API Cluster the pools join.
	Cluster string
	// ResourceGroup is the AKS cluster's (aks).
	ResourceGroup string
	// Site, Namespace, KubernetesVersion, ImageURL and ImageChecksum
	// describe the bare-metal cluster and its node image (natron).
	Site, Namespace, KubernetesVersion, ImageURL, ImageChecksum string
	// RenderDir, when set, renders YAML for GitOps instead of applying.
	RenderDir string
}

var stackName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,99}$`)

// Problems lists what is missing or wrong in the answers, by flag.
func (o Options) Problems() []string {
	var out []string
	if !stackName.MatchString(o.Name) {
		out = append(out, fmt.Sprintf("NAME %q: a stack name is letters, digits, '-', '_' and '.', at most 100", o.Name))
	}
	need := map[string]string{"CLUSTER": o.Cluster}
	switch o.Target {
	case "aks":
		need["RESOURCE_GROUP"] = o.ResourceGroup
	case "natron":
		need["K8S_VERSION"], need["IMAGE_URL"], need["IMAGE_CHECKSUM"] = o.KubernetesVersion, o.ImageURL, o.ImageChecksum
	default:
		return append(out, fmt.Sprintf("TARGET %q: aks or natron", o.Target))
	}
	for _, k := range []string{"CLUSTER", "RESOURCE_GROUP", "K8S_VERSION", "IMAGE_URL", "IMAGE_CHECKSUM"} {
		if v, ok := need[k]; ok && v == "" {
			out = append(out, k+": required for target "+o.Target)
		}
	}
	return out
}

//go:embed stack.yaml.tmpl
var stackTemplate string

var tmpl = template.Must(template.New("stack").Parse(stackTemplate))

// File is the new stack file's text.
func File(o Options) (string, error) {
	if o.Target == "natron" {
		o.Site = cmp.Or(o.Site, "natron-cloud") // the site's validation is the target's
		o.Namespace = cmp.Or(o.Namespace, "capi-"+o.Cluster)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, o); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Secrets are the secret keys the new stack needs before it previews.
func Secrets(o Options) []string {
	if o.Target == "natron" && o.RenderDir == "" {
		return []string{config.Key("natron") + ".kubeconfig", config.Key("natron") + ".managementKubeconfig"}
	}
	return nil
}

// NextSteps are the commands to run after the file is written: the
// stack's creation with its own secrets provider, each secret, a preview.
func NextSteps(o Options) []string {
	steps := []string{
		`eval "$(make -s env)"    # the toolchain, backend and PULUMI_HOME that make preview uses`,
		`export PULUMI_CONFIG_PASSPHRASE='<this customer's passphrase>'    # or a KMS secrets provider`,
		"pulumi stack init " + o.Name + " --secrets-provider passphrase",
	}
	files := map[string]string{"kubeconfig": "<workload cluster kubeconfig file>", "managementKubeconfig": "<management cluster kubeconfig file>"}
	for _, k := range Secrets(o) {
		_, leaf, _ := strings.Cut(k, ".")
		steps = append(steps, fmt.Sprintf(`pulumi config set --secret --path %s --stack %s -- "$(cat %s)"`, k, o.Name, files[leaf]))
	}
	return append(steps, "make preview STACK="+o.Name)
}
