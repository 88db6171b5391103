package natron

import (
	_ "embed"

	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/stacks/target"
)

//go:embed scaffold.yaml.tmpl
var scaffoldBlock string

// Scaffold: a bare-metal stack names its site, its Cluster API namespace,
// the workload cluster's version and the node image; it needs both
// clusters' kubeconfigs unless it renders.
func (Target) Scaffold() target.Scaffold {
	return target.Scaffold{
		Questions: []target.Question{
			{Flag: "site", Var: "SITE", Key: "natron.site", Help: "natron-cloud or flex-stack (default natron-cloud)",
				Default: func(target.Answers) string { return Sites[0] }},
			{Flag: "namespace", Var: "NAMESPACE", Key: "natron.namespace", Help: "the Cluster's namespace (default capi-<cluster>)",
				Default: func(a target.Answers) string { return "capi-" + a.Cluster }},
			{Flag: "kubernetes-version", Var: "K8S_VERSION", Key: "natron.kubernetesVersion", Help: "the workload cluster's version, e.g. v1.33.4", Required: true},
			{Flag: "image-url", Var: "IMAGE_URL", Key: "natron.image.url", Help: "the node OS image URL", Required: true},
			{Flag: "image-checksum", Var: "IMAGE_CHECKSUM", Key: "natron.image.checksum", Help: "its checksum or a URL to it", Required: true},
		},
		Block: scaffoldBlock,
		Secrets: func(a target.Answers) []target.SecretPrompt {
			if a.RenderDir != "" {
				return nil
			}
			return []target.SecretPrompt{
				{Key: kube.Project + ":" + string(Name) + ".kubeconfig", From: "<workload cluster kubeconfig file>"},
				{Key: kube.Project + ":" + string(Name) + ".managementKubeconfig", From: "<management cluster kubeconfig file>"},
			}
		},
	}
}
