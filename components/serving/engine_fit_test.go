package serving

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/natron/gpu-node-pools/internal/fit"
	"github.com/natron/gpu-node-pools/internal/testkit/pooltest"
)

func TestChartOverride(t *testing.T) {
	t.Parallel()
	var o Options
	o.Charts.VLLMStack.Version = "0.1.13"
	got := o.Defaults("cephfs", Cilium).Charts
	if v := got.VLLMStack; v.Version != "0.1.13" || v.Repo != VLLMStackChart.Repo || v.Name != "vllm-stack" {
		t.Errorf("override = %+v", v)
	}
	if diff := cmp.Diff(KEDAChart, got.KEDA); diff != "" {
		t.Errorf("an empty override changed the pin (-pinned +got):\n%s", diff)
	}
}

// vLLM's start-up rule (vllm/v1/worker/gpu_worker.py, Worker.init_device,
// at v0.11.0): a worker needs total × gpu_memory_utilization free on its
// GPU when it starts, and then holds that much. Time-sliced replicas of a
// model share one physical GPU: every one of them must start.
func TestTimeSlicedReplicasAllStart(t *testing.T) {
	t.Parallel()
	for _, shares := range []int{1, 2, 4, 7} {
		p := pooltest.TimeSliced(t, shares)
		if shares == 1 {
			p = pooltest.Pool(t, pooltest.AKS, "Standard_NC24ads_A100_v4", 2, "")
		}
		e := Engine{Model: fit.Model{Name: "m", ParametersB: 1, Dtype: "float16", TensorParallel: 1, GPUMemoryUtilization: 0.9, MaxReplicas: shares}, Pool: p}
		if misfits := fit.Fit(field.NewPath("m"), e.Model, p); len(misfits) != 0 {
			t.Fatalf("%d shares: the test model must fit: %v", shares, misfits)
		}
		total := float64(p.GPUMemoryGB)
		free := total
		for r := 1; r <= shares; r++ {
			want := total * e.MemoryUtilization()
			if free < want {
				t.Fatalf("%d shares: replica %d finds %.1f of %.0f GB free, below gpu_memory_utilization %.3f (%.1f GB): vLLM refuses to start",
					shares, r, free, total, e.MemoryUtilization(), want)
			}
			free -= want
		}
		if got, want := e.MemoryUtilization()*float64(shares), 0.9; got > want || got < want-0.01 {
			t.Errorf("%d shares use %.3f of the GPU together, want the configured %.2f", shares, got, want)
		}
	}
}
