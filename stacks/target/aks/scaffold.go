package aks

import (
	_ "embed"

	"github.com/natron/gpu-node-pools/stacks/target"
)

//go:embed scaffold.yaml.tmpl
var scaffoldBlock string

// Scaffold: an AKS stack needs the cluster's resource group; it signs in
// with the Azure CLI and needs no secret to preview.
func (Target) Scaffold() target.Scaffold {
	return target.Scaffold{
		Questions: []target.Question{{Flag: "resource-group", Var: "RESOURCE_GROUP", Key: "aks.resourceGroup", Help: "the AKS cluster's resource group", Required: true}},
		Block:     scaffoldBlock,
		Secrets:   func(target.Answers) []target.SecretPrompt { return nil },
	}
}
