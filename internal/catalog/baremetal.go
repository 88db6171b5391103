package catalog

// Natron pools are bare-metal machines managed through Cluster API.
const Natron Target = "natron"

// BareMetal is the bare-metal target's section: the server shapes racked
// at Natron Cloud and Flex Stack.
var BareMetal = NewSection(Natron, bareMetalProfiles)

// bareMetalProfiles are the server shapes racked at Natron Cloud and Flex
// Stack (HGX boards). Hosts carry the profile name as a BareMetalHost label.
var bareMetalProfiles = []SKU{
	{Name: "a100-40gb-x8", Family: "HGX A100", GPU: a100SXM40, GPUs: 8, VCPUs: 256, MemoryGiB: 1024, Link: nvlink3},
	{Name: "a100-80gb-x4", Family: "HGX A100", GPU: a100SXM80, GPUs: 4, VCPUs: 128, MemoryGiB: 1024, Link: nvlink3},
	{Name: "a100-80gb-x8", Family: "HGX A100", GPU: a100SXM80, GPUs: 8, VCPUs: 256, MemoryGiB: 2048, Link: nvlink3},
	{Name: "h100-80gb-x4", Family: "HGX H100", GPU: h100SXM, GPUs: 4, VCPUs: 112, MemoryGiB: 1024, Link: nvlink4},
	{Name: "h100-80gb-x8", Family: "HGX H100", GPU: h100SXM, GPUs: 8, VCPUs: 224, MemoryGiB: 2048, Link: nvlink4},
}
