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
}

// Mocks records every resource and call. Safe for concurrent use.
type Mocks struct {
	mu        sync.Mutex
	resources []Resource
	calls     []pulumi.MockCallArgs
}

// GeneratedSecret is the "random" password the mocks generate.
const GeneratedSecret = "generated-" + SecretMarker

// AKSKubeconfig is what the mocked Azure API returns as the user kubeconfig.
const AKSKubeconfig = "apiVersion: v1\nkind: Config\nclusters: []\n# mock aks user kubeconfig\n"

// NewResource records the resource and echoes its inputs as its state.
func (m *Mocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	r := Resource{Type: args.TypeToken, Name: args.Name, Inputs: args.Inputs, Provider: args.Provider}
	if rpc := args.RegisterRPC; rpc != nil {
		r.Protect = rpc.GetProtect()
		r.Parent = rpc.GetParent()
		r.IgnoreChanges = rpc.GetIgnoreChanges()
		r.ReplaceOnChanges = rpc.GetReplaceOnChanges()
		r.DeleteBeforeReplace = rpc.GetDeleteBeforeReplace()
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
	m := &Mocks{}
	err := pulumi.RunErr(program, pulumi.WithMocks(project, stack, m), func(info *pulumi.RunInfo) {
		info.Config = config
		info.ConfigSecretKeys = secretKeys
	})
	return m, err
}
