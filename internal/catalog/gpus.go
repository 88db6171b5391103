package catalog

// Speed is what a GPU's data sheet says about its memory bandwidth and
// Tensor Core throughput: the inputs of the throughput model. Throughputs
// are dense (the data sheets' "with sparsity" figures halved); 0 where the
// GPU has no Tensor Core support for the format.
type Speed struct {
	// BandwidthGBps is the memory bandwidth, GB/s.
	BandwidthGBps int
	// BF16TFLOPS, FP16TFLOPS and FP8TFLOPS are dense Tensor Core TFLOPS.
	BF16TFLOPS, FP16TFLOPS, FP8TFLOPS float64
	// Formats are the weight and activation formats the Tensor Cores run
	// natively (fp8, int8, int4): a quantization in one of them is computed
	// in it; any other is dequantized first.
	Formats []string
	// DataSheet is where the figures come from.
	DataSheet string
}

// RunsNatively reports whether the GPU computes in format natively.
func (s Speed) RunsNatively(format string) bool {
	for _, f := range s.Formats {
		if f == format {
			return true
		}
	}
	return false
}

// The data sheets.
const (
	a100Sheet = "NVIDIA A100 Tensor Core GPU data sheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf)"
	h100Sheet = "NVIDIA H100 Tensor Core GPU data sheet (h100-datasheet-2287922, H100 SXM and H100 NVL columns)"
	h200Sheet = "NVIDIA H200 Tensor Core GPU data sheet (hpc-datasheet-sc23-h200-datasheet-3002446)"
	v100Sheet = "NVIDIA V100 Tensor Core GPU data sheet (volta-v100-datasheet-update-us-1165301-r5, V100 PCIe column)"
	t4Sheet   = "NVIDIA T4 Tensor Core GPU data sheet (t4-tensor-core-datasheet-951643)"
	a10Sheet  = "NVIDIA A10 Tensor Core GPU data sheet (a10-datasheet-2146018)"
)

var (
	// A100: 312 TFLOPS BF16/FP16 (624 sparse); INT8 and INT4 Tensor Cores; no FP8.
	a100PCIe80Speed = Speed{BandwidthGBps: 1935, BF16TFLOPS: 312, FP16TFLOPS: 312, Formats: []string{"int8", "int4"}, DataSheet: a100Sheet}
	a100SXM40Speed  = Speed{BandwidthGBps: 1555, BF16TFLOPS: 312, FP16TFLOPS: 312, Formats: []string{"int8", "int4"}, DataSheet: a100Sheet}
	a100SXM80Speed  = Speed{BandwidthGBps: 2039, BF16TFLOPS: 312, FP16TFLOPS: 312, Formats: []string{"int8", "int4"}, DataSheet: a100Sheet}
	// H100 SXM: 1,979 TFLOPS BF16 and 3,958 FP8 with sparsity; H100 NVL:
	// 1,671 and 3,341. Hopper's Tensor Cores have FP8 and INT8, no INT4.
	h100SXMSpeed = Speed{BandwidthGBps: 3350, BF16TFLOPS: 989.5, FP16TFLOPS: 989.5, FP8TFLOPS: 1979, Formats: []string{"fp8", "int8"}, DataSheet: h100Sheet}
	h100NVLSpeed = Speed{BandwidthGBps: 3900, BF16TFLOPS: 835.5, FP16TFLOPS: 835.5, FP8TFLOPS: 1670.5, Formats: []string{"fp8", "int8"}, DataSheet: h100Sheet}
	h200SXMSpeed = Speed{BandwidthGBps: 4800, BF16TFLOPS: 989.5, FP16TFLOPS: 989.5, FP8TFLOPS: 1979, Formats: []string{"fp8", "int8"}, DataSheet: h200Sheet}
	// V100 PCIe: 112 TFLOPS of FP16 Tensor Core; no BF16, no integer Tensor Cores.
	v100PCIeSpeed = Speed{BandwidthGBps: 900, FP16TFLOPS: 112, DataSheet: v100Sheet}
	// T4: 65 TFLOPS FP16 mixed precision, 130 TOPS INT8, 260 INT4; no BF16.
	t4Speed = Speed{BandwidthGBps: 320, FP16TFLOPS: 65, Formats: []string{"int8", "int4"}, DataSheet: t4Sheet}
	// A10: 125 TFLOPS BF16/FP16 (250 sparse), INT8 and INT4.
	a10Speed = Speed{BandwidthGBps: 600, BF16TFLOPS: 125, FP16TFLOPS: 125, Formats: []string{"int8", "int4"}, DataSheet: a10Sheet}
)

// Link is how one node's GPUs talk to each other.
type Link struct {
	// Kind is NVLink or PCIe.
	Kind string
	// GBps is the bandwidth each GPU has to its peers, GB/s (both
	// directions together, as the data sheets count it).
	GBps int
}

// The links: NVLink through NVSwitch on HGX and ND boards (600 GB/s for
// A100, 900 for H100 and H200; the A100 and H100 data sheets); the NVLink
// bridge that pairs two H100 NVL cards (600 GB/s, the H100 NVL product
// brief; NCCL finds it on the NCads H100 v5 pair); PCIe Gen4 x16 (64 GB/s)
// or Gen5 (128 GB/s) where PCIe cards are not bridged, as on the other NC
// and NV sizes.
var (
	NVLink3      = Link{Kind: "NVLink", GBps: 600}
	NVLink4      = Link{Kind: "NVLink", GBps: 900}
	NVLinkBridge = Link{Kind: "NVLink", GBps: 600}
	PCIe3        = Link{Kind: "PCIe", GBps: 32}
	PCIe4        = Link{Kind: "PCIe", GBps: 64}
	PCIe5        = Link{Kind: "PCIe", GBps: 128}
)
