package natron

import "github.com/natron/gpu-node-pools/internal/catalog"

// Name is the target's config value and block key: natron pools are
// bare-metal machines managed through Cluster API.
const Name catalog.Target = "natron"

// Profiles is the target's catalog section: the server shapes racked
// at Natron Cloud and Flex Stack.
var Profiles = catalog.NewSection(Name, profiles)

// profiles are the server shapes racked at Natron Cloud and Flex
// Stack (HGX boards). Hosts carry the profile name as a BareMetalHost label.
var profiles = []catalog.SKU{
	{Name: "a100-40gb-x8", Family: "HGX A100", GPU: catalog.A100SXM40, GPUs: 8, VCPUs: 256, MemoryGiB: 1024, Link: catalog.NVLink3},
	{Name: "a100-80gb-x4", Family: "HGX A100", GPU: catalog.A100SXM80, GPUs: 4, VCPUs: 128, MemoryGiB: 1024, Link: catalog.NVLink3},
	{Name: "a100-80gb-x8", Family: "HGX A100", GPU: catalog.A100SXM80, GPUs: 8, VCPUs: 256, MemoryGiB: 2048, Link: catalog.NVLink3},
	{Name: "h100-80gb-x4", Family: "HGX H100", GPU: catalog.H100SXM, GPUs: 4, VCPUs: 112, MemoryGiB: 1024, Link: catalog.NVLink4},
	{Name: "h100-80gb-x8", Family: "HGX H100", GPU: catalog.H100SXM, GPUs: 8, VCPUs: 224, MemoryGiB: 2048, Link: catalog.NVLink4},
}
