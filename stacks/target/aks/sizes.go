package aks

import "github.com/natron/gpu-node-pools/internal/catalog"

// Name is the target's config value and block key: AKS pools are agent
// pools of a customer's existing AKS cluster.
const Name catalog.Target = "aks"

// Sizes is the target's catalog section: its GPU VM sizes. The figures follow
// Microsoft's published size tables (vCPUs, memory in GiB, GPUs and memory
// per GPU in GB).
var Sizes = catalog.NewSection(Name, sizes)

// sizes are the AKS GPU VM sizes. NVadsA10 v5 sizes below a whole GPU
// (NV6/NV12/NV18) are left out on purpose: they expose a vGPU partition that
// needs the GRID driver, which the NVIDIA device plugin path here does not use.
var sizes = []catalog.SKU{
	{Name: "Standard_NC24ads_A100_v4", Family: "NC A100 v4", GPU: catalog.A100PCIe80, GPUs: 1, VCPUs: 24, MemoryGiB: 220, Link: catalog.PCIe4},
	{Name: "Standard_NC48ads_A100_v4", Family: "NC A100 v4", GPU: catalog.A100PCIe80, GPUs: 2, VCPUs: 48, MemoryGiB: 440, Link: catalog.PCIe4},
	{Name: "Standard_NC96ads_A100_v4", Family: "NC A100 v4", GPU: catalog.A100PCIe80, GPUs: 4, VCPUs: 96, MemoryGiB: 880, Link: catalog.PCIe4},
	{Name: "Standard_NC40ads_H100_v5", Family: "NCads H100 v5", GPU: catalog.H100NVL, GPUs: 1, VCPUs: 40, MemoryGiB: 320, Link: catalog.PCIe5},
	{Name: "Standard_NC80adis_H100_v5", Family: "NCads H100 v5", GPU: catalog.H100NVL, GPUs: 2, VCPUs: 80, MemoryGiB: 640, Link: catalog.NVLinkBridge},
	{Name: "Standard_ND96asr_v4", Family: "ND A100 v4", GPU: catalog.A100SXM40, GPUs: 8, VCPUs: 96, MemoryGiB: 900, Link: catalog.NVLink3},
	{Name: "Standard_ND96amsr_A100_v4", Family: "NDm A100 v4", GPU: catalog.A100SXM80, GPUs: 8, VCPUs: 96, MemoryGiB: 1900, Link: catalog.NVLink3},
	{Name: "Standard_ND96isr_H100_v5", Family: "ND H100 v5", GPU: catalog.H100SXM, GPUs: 8, VCPUs: 96, MemoryGiB: 1900, Link: catalog.NVLink4},
	{Name: "Standard_ND96isr_H200_v5", Family: "ND H200 v5", GPU: catalog.H200SXM, GPUs: 8, VCPUs: 96, MemoryGiB: 1850, Link: catalog.NVLink4},
	{Name: "Standard_NC6s_v3", Family: "NCv3", GPU: catalog.V100, GPUs: 1, VCPUs: 6, MemoryGiB: 112, Link: catalog.PCIe3},
	{Name: "Standard_NC12s_v3", Family: "NCv3", GPU: catalog.V100, GPUs: 2, VCPUs: 12, MemoryGiB: 224, Link: catalog.PCIe3},
	{Name: "Standard_NC24s_v3", Family: "NCv3", GPU: catalog.V100, GPUs: 4, VCPUs: 24, MemoryGiB: 448, Link: catalog.PCIe3},
	{Name: "Standard_NC24rs_v3", Family: "NCv3", GPU: catalog.V100, GPUs: 4, VCPUs: 24, MemoryGiB: 448, Link: catalog.PCIe3},
	{Name: "Standard_NC4as_T4_v3", Family: "NCasT4_v3", GPU: catalog.T4, GPUs: 1, VCPUs: 4, MemoryGiB: 28, Link: catalog.PCIe3},
	{Name: "Standard_NC8as_T4_v3", Family: "NCasT4_v3", GPU: catalog.T4, GPUs: 1, VCPUs: 8, MemoryGiB: 56, Link: catalog.PCIe3},
	{Name: "Standard_NC16as_T4_v3", Family: "NCasT4_v3", GPU: catalog.T4, GPUs: 1, VCPUs: 16, MemoryGiB: 110, Link: catalog.PCIe3},
	{Name: "Standard_NC64as_T4_v3", Family: "NCasT4_v3", GPU: catalog.T4, GPUs: 4, VCPUs: 64, MemoryGiB: 440, Link: catalog.PCIe3},
	{Name: "Standard_NV36ads_A10_v5", Family: "NVadsA10 v5", GPU: catalog.A10, GPUs: 1, VCPUs: 36, MemoryGiB: 440, Link: catalog.PCIe4},
	{Name: "Standard_NV36adms_A10_v5", Family: "NVadsA10 v5", GPU: catalog.A10, GPUs: 1, VCPUs: 36, MemoryGiB: 880, Link: catalog.PCIe4},
	{Name: "Standard_NV72ads_A10_v5", Family: "NVadsA10 v5", GPU: catalog.A10, GPUs: 2, VCPUs: 72, MemoryGiB: 880, Link: catalog.PCIe4},
}
