// Package pulumitest has the shared test helpers: one recording mock type for
// Pulumi's mock monitor, a reader for the real stack files, and the location
// of the shared test assets.
package pulumitest

import (
	"encoding/base64"
	"fmt"
	"sort"
	"sync"
	"time"

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
	// ficWrites are the federated identity credential writes in flight,
	// per managed identity (ficWrite).
	ficWrites map[string]bool
}

// ficWriteTime is how long the mocked Azure takes to write a federated
// identity credential: long enough that two writes the program does not
// order overlap, as they do against Azure.
const ficWriteTime = 30 * time.Millisecond

// ficWrite answers as Azure does a write of a federated identity
// credential: Entra ID takes one write at a time per managed identity and
// answers any other that overlaps it with 409
// ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity
// (Microsoft Entra workload ID docs, "Considerations": "concurrent writes
// ... are not supported"; pulumi-azure-native#4343).
func (m *Mocks) ficWrite(in resource.PropertyMap) error {
	id := fmt.Sprint(in["resourceGroupName"].V, "/", in["resourceName"].V)
	m.mu.Lock()
	if m.ficWrites[id] {
		m.mu.Unlock()
		return fmt.Errorf("409 ConcurrentFederatedIdentityCredentialsWritesForSingleManagedIdentity: too many federated identity credentials written concurrently for the managed identity %s", id)
	}
	if m.ficWrites == nil {
		m.ficWrites = map[string]bool{}
	}
	m.ficWrites[id] = true
	m.mu.Unlock()
	time.Sleep(ficWriteTime)
	m.mu.Lock()
	delete(m.ficWrites, id)
	m.mu.Unlock()
	return nil
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
	if args.TypeToken == "azure-native:managedidentity:FederatedIdentityCredential" {
		if err := m.ficWrite(args.Inputs); err != nil {
			return "", nil, err
		}
	}
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
