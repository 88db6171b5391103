package catalog

// AKS pools are agent pools of a customer's existing AKS cluster.
const AKS Target = "aks"

// Azure is the AKS target's section: its GPU VM sizes. The figures follow
// Microsoft's published size tables (vCPUs, memory in GiB, GPUs and memory
// per GPU in GB).
var Azure = NewSection(AKS, azureSizes)

// azureSizes are the AKS GPU VM sizes. NVadsA10 v5 sizes below a whole GPU
// (NV6/NV12/NV18) are left out on purpose: they expose a vGPU partition that
// needs the GRID driver, which the NVIDIA device plugin path here does not use.
var azureSizes = []SKU{
	{Name: "Standard_NC24ads_A100_v4", Family: "NC A100 v4", GPU: a100PCIe80, GPUs: 1, VCPUs: 24, MemoryGiB: 220, Link: pcie4},
	{Name: "Standard_NC48ads_A100_v4", Family: "NC A100 v4", GPU: a100PCIe80, GPUs: 2, VCPUs: 48, MemoryGiB: 440, Link: pcie4},
	{Name: "Standard_NC96ads_A100_v4", Family: "NC A100 v4", GPU: a100PCIe80, GPUs: 4, VCPUs: 96, MemoryGiB: 880, Link: pcie4},
	{Name: "Standard_NC40ads_H100_v5", Family: "NCads H100 v5", GPU: h100NVL, GPUs: 1, VCPUs: 40, MemoryGiB: 320, Link: pcie5},
	{Name: "Standard_NC80adis_H100_v5", Family: "NCads H100 v5", GPU: h100NVL, GPUs: 2, VCPUs: 80, MemoryGiB: 640, Link: pcie5},
	{Name: "Standard_ND96asr_v4", Family: "ND A100 v4", GPU: a100SXM40, GPUs: 8, VCPUs: 96, MemoryGiB: 900, Link: nvlink3},
	{Name: "Standard_ND96amsr_A100_v4", Family: "NDm A100 v4", GPU: a100SXM80, GPUs: 8, VCPUs: 96, MemoryGiB: 1900, Link: nvlink3},
	{Name: "Standard_ND96isr_H100_v5", Family: "ND H100 v5", GPU: h100SXM, GPUs: 8, VCPUs: 96, MemoryGiB: 1900, Link: nvlink4},
	{Name: "Standard_ND96isr_H200_v5", Family: "ND H200 v5", GPU: h200SXM, GPUs: 8, VCPUs: 96, MemoryGiB: 1850, Link: nvlink4},
	{Name: "Standard_NC6s_v3", Family: "NCv3", GPU: v100, GPUs: 1, VCPUs: 6, MemoryGiB: 112, Link: pcie3},
	{Name: "Standard_NC12s_v3", Family: "NCv3", GPU: v100, GPUs: 2, VCPUs: 12, MemoryGiB: 224, Link: pcie3},
	{Name: "Standard_NC24s_v3", Family: "NCv3", GPU: v100, GPUs: 4, VCPUs: 24, MemoryGiB: 448, Link: pcie3},
	{Name: "Standard_NC24rs_v3", Family: "NCv3", GPU: v100, GPUs: 4, VCPUs: 24, MemoryGiB: 448, Link: pcie3},
	{Name: "Standard_NC4as_T4_v3", Family: "NCasT4_v3", GPU: t4, GPUs: 1, VCPUs: 4, MemoryGiB: 28, Link: pcie3},
	{Name: "Standard_NC8as_T4_v3", Family: "NCasT4_v3", GPU: t4, GPUs: 1, VCPUs: 8, MemoryGiB: 56, Link: pcie3},
	{Name: "Standard_NC16as_T4_v3", Family: "NCasT4_v3", GPU: t4, GPUs: 1, VCPUs: 16, MemoryGiB: 110, Link: pcie3},
	{Name: "Standard_NC64as_T4_v3", Family: "NCasT4_v3", GPU: t4, GPUs: 4, VCPUs: 64, MemoryGiB: 440, Link: pcie3},
	{Name: "Standard_NV36ads_A10_v5", Family: "NVadsA10 v5", GPU: a10, GPUs: 1, VCPUs: 36, MemoryGiB: 440, Link: pcie4},
	{Name: "Standard_NV36adms_A10_v5", Family: "NVadsA10 v5", GPU: a10, GPUs: 1, VCPUs: 36, MemoryGiB: 880, Link: pcie4},
	{Name: "Standard_NV72ads_A10_v5", Family: "NVadsA10 v5", GPU: a10, GPUs: 2, VCPUs: 72, MemoryGiB: 880, Link: pcie4},
}
