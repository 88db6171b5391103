package catalog

// One MIG instance's memory by memory eighths, as nvidia-smi mig -lgip
// lists it in published output:
//   - A100 40GB: NVIDIA developer forum, "Why MIG instances can only sum up
//     to 98 SMs instead of the 108 SMs available?" (1g.5gb 4.75 GiB,
//     2g.10gb 9.75, 3g/4g.20gb 19.62, 7g.40gb 39.50).
//   - H100 80GB HBM3 (132 SMs): jbarrow.ai field notes, "Nvidia MIG"
//     (1g.10gb 9.75, 2g.20gb 19.62, 3g/4g.40gb 39.50, 7g.80gb 79.25).
//   - H100 NVL: NVIDIA/gpu-operator pull 900 and NVIDIA/mig-parted pull 101
//     (1g.12gb 10.75, 2g.24gb 21.62, 3g/4g.47gb 46.38; 7g not listed).
//   - H200: NVIDIA/mig-parted issue 120 (1g.18gb 16.00, 2g.35gb 32.25,
//     3g/4g.71gb 69.50, 7g.141gb 139.75).
//
// The A100 80GB is the 40GB's GA100 with twice the memory in the same
// eight slices; no published listing was found, so it is the 40GB's
// doubled (9.50, 19.50, 39.25, 79.00).
var (
	a100x40MIG = map[int]float64{1: 4.75, 2: 9.75, 4: 19.62, 8: 39.50}
	a100x80MIG = map[int]float64{1: 9.50, 2: 19.50, 4: 39.25, 8: 79.00}
	h100x80MIG = map[int]float64{1: 9.75, 2: 19.62, 4: 39.50, 8: 79.25}
	h100NVLMIG = map[int]float64{1: 10.75, 2: 21.62, 4: 46.38}
	h200MIG    = map[int]float64{1: 16.00, 2: 32.25, 4: 69.50, 8: 139.75}
)
