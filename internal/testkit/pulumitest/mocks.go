// Package pulumitest has the shared test helpers: one recording mock type for
// Pulumi's mock monitor, a reader for the real stack files, and the location
// of the shared test assets.
package pulumitest

import (
	"encoding/base64"
	"fmt"
	"sort"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Resource is one registered resource as the engine would have received it.
type Resource struct {
	Type     string
	Name     string
	Inputs   resource.PropertyMap
	Protect  bool
	Parent   string
	Provider string
	// IgnoreChanges, ReplaceOnChanges and DeleteBeforeReplace are the
	// lifecycle options the program asked for.
	IgnoreChanges       []string
	ReplaceOnChanges    []string
	DeleteBeforeReplace bool
	// Version is the provider plugin version the resource asked for.
	Version string
}

// Mocks records every resource and call. Safe for concurrent use.
type Mocks struct {
	mu        sync.Mutex
	resources []Resource
	calls     []pulumi.MockCallArgs
	// AKSCluster, when set, is what the mocked Azure API returns for the
	// managed cluster (default: OIDC issuer and workload identity on).
	AKSCluster map[string]any
}

// AKSIssuer is the mocked cluster's OIDC issuer URL.
const AKSIssuer = "https://westeurope.oic.prod-aks.azure.com/72f988bf-86f1-41af-91ab-2d7cd011db47/4c1a6a8b-1f0e-4a3e-9c1b-2d5e6f7a8b9c/"

// GeneratedSecret is the "random" password the mocks generate.
const GeneratedSecret = "generated-" + SecretMarker

// AKSKubeconfig is what the mocked Azure API returns as the user
// kubeconfig of an Entra ID-integrated cluster: kubelogin, interactive.
const AKSKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: acme-prod
  cluster:
    server: https://acme-prod.hcp.westeurope.azmk8s.io:443
users:
- name: clusterUser_rg-acme_acme-prod
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: kubelogin
      args: [get-token, --environment, AzurePublicCloud, --server-id, 6dae42f8-4368-4678-94ff-3960e28e3630,
        --client-id, 80faf920-1908-4b52-b5ef-a8e7bedfc67a, --tenant-id, 72f988bf-86f1-41af-91ab-2d7cd011db47, --login, devicecode]
`

// NewResource records the resource and echoes its inputs as its state.
func (m *Mocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	r := Resource{Type: args.TypeToken, Name: args.Name, Inputs: args.Inputs, Provider: args.Provider}
	if rpc := args.RegisterRPC; rpc != nil {
		r.Protect = rpc.GetProtect()
		r.Parent = rpc.GetParent()
		r.IgnoreChanges = rpc.GetIgnoreChanges()
		r.ReplaceOnChanges = rpc.GetReplaceOnChanges()
		r.DeleteBeforeReplace = rpc.GetDeleteBeforeReplace()
		r.Version = rpc.GetVersion()
	}
	m.mu.Lock()
	m.resources = append(m.resources, r)
	m.mu.Unlock()
	state := args.Inputs.Copy()
	switch args.TypeToken {
	case "azure-native:containerservice:AgentPool":
		state["provisioningState"] = resource.NewStringProperty("Succeeded")
	case "random:index/randomPassword:RandomPassword":
		// what the random provider would generate, marked so tests can
		// search for it; the provider marks it secret
		state["result"] = resource.MakeSecret(resource.NewStringProperty(GeneratedSecret))
	}
	return args.Name + "-id", state, nil
}

// Call answers the invokes the program makes.
func (m *Mocks) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	m.mu.Lock()
	m.calls = append(m.calls, args)
	m.mu.Unlock()
	switch args.Token {
	case "azure-native:containerservice:listManagedClusterUserCredentials":
		return resource.NewPropertyMapFromMap(map[string]any{
			"kubeconfigs": []any{map[string]any{
				"name":  "clusterUser",
				"value": base64.StdEncoding.EncodeToString([]byte(AKSKubeconfig)),
			}},
		}), nil
	case "azure-native:containerservice:getManagedCluster":
		if m.AKSCluster != nil {
			return resource.NewPropertyMapFromMap(m.AKSCluster), nil
		}
		return resource.NewPropertyMapFromMap(map[string]any{
			"name":              args.Args["resourceName"].StringValue(),
			"location":          "westeurope",
			"oidcIssuerProfile": map[string]any{"enabled": true, "issuerURL": AKSIssuer},
			"securityProfile":   map[string]any{"workloadIdentity": map[string]any{"enabled": true}},
		}), nil
	}
	return nil, fmt.Errorf("unexpected call %s", args.Token)
}

// Resources returns the recorded resources sorted by type and name.
func (m *Mocks) Resources() []Resource {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := append([]Resource(nil), m.resources...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Calls returns the recorded invokes.
func (m *Mocks) Calls() []pulumi.MockCallArgs {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]pulumi.MockCallArgs(nil), m.calls...)
}

// ByName returns the resource of a type and name, or false.
func (m *Mocks) ByName(typ, name string) (Resource, bool) {
	for _, r := range m.Resources() {
		if r.Type == typ && r.Name == name {
			return r, true
		}
	}
	return Resource{}, false
}

// Run runs a program under the mocks with the given stack config (full keys
// such as gpu-node-pools:target) and returns the recording and the error.
func Run(program pulumi.RunFunc, project, stack string, config map[string]string, secretKeys []string) (*Mocks, error) {
	return (&Mocks{}).Run(program, project, stack, config, secretKeys)
}

// Run runs program against these mocks (set AKSCluster first to change
// what Azure answers).
func (m *Mocks) Run(program pulumi.RunFunc, project, stack string, config map[string]string, secretKeys []string) (*Mocks, error) {
	err := pulumi.RunErr(program, pulumi.WithMocks(project, stack, m), func(info *pulumi.RunInfo) {
		info.Config = config
		info.ConfigSecretKeys = secretKeys
	})
	return m, err
}
