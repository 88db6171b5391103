package serving_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/testkit/pooltest"
)

// The download Job's own script, run by a real shell on a cache directory
// with a stand-in rclone that records what it copies, and the engine's
// wait for the weights, run the same way: an upgraded stack's unkeyed copy
// neither releases the engine nor stays; a first download copies and
// releases the engine; a rerun copies nothing; a new source is copied
// again, into a place the engine started for it reads, and the engine of
// the new source does not start on the old weights.
func TestDownloadFollowsTheSource(t *testing.T) {
	t.Parallel()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on this machine")
	}
	cache := t.TempDir()
	bin := t.TempDir()
	copies := filepath.Join(t.TempDir(), "copies")
	// rclone copy <flags> <source> <dir>: record the source, write a file
	rclone := "#!/bin/sh\nfor a; do src=$dst; dst=$a; done\necho \"$src\" >> " + copies + "\nmkdir -p \"$dst\" && echo \"$src\" > \"$dst/weights\"\n"
	if err := os.WriteFile(filepath.Join(bin, "rclone"), []byte(rclone), 0o755); err != nil {
		t.Fatal(err)
	}
	pool := pooltest.Resolved(t, pooltest.Natron, gpupool.Spec{Name: "infer", SKU: "h100-80gb-x8", MaxNodes: 2}).Facts
	engine := func(source string) serving.Engine {
		m := serving.ModelSpec{Name: "llama", Pool: "infer", Source: source, ParametersB: 8, Dtype: "bfloat16", TensorParallel: 1,
			MaxModelLen: 8192, GPUMemoryUtilization: 0.9, MinReplicas: new(1), MaxReplicas: 1, QueueDepthTarget: 5}
		return serving.NewEngine(m, pool, serving.Options{}.Defaults("cephfs", serving.Cilium), nil, "")
	}
	// run runs a container's shell command with the cache where the pod
	// mounts it
	run := func(command string) (string, error) {
		command = strings.ReplaceAll(command, serving.WeightsPath, cache)
		cmd := exec.Command(sh, "-c", command)
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	download := func(e serving.Engine) {
		t.Helper()
		job := serving.DownloadJob("models", e, serving.Storage{Kind: serving.S3}, kube.WorkloadIdentity{})
		c := get(job, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
		if out, err := run(c["command"].([]any)[2].(string)); err != nil {
			t.Fatalf("download of %s: %v\n%s", e.Source, err, out)
		}
	}
	// ready reports whether the engine's init container would let it
	// start now (its loop, with the sleep cut to one check)
	ready := func(e serving.Engine) bool {
		t.Helper()
		wait := serving.WaitForWeights(e)["args"].([]any)[0].(string)
		check := strings.Replace(wait, "do echo waiting for weights; sleep 10; done", "do exit 1; done", 1)
		_, err := run(check)
		return err == nil
	}
	recorded := func() []string {
		b, _ := os.ReadFile(copies)
		return strings.Fields(string(b))
	}
	v1, v2 := engine("s3://models/llama/v1"), engine("s3://models/llama/v2")
	// a cache as the program filled it before weights were keyed by
	// source: the files and the marker at the model's own directory
	legacy := filepath.Join(cache, "llama")
	if err := os.MkdirAll(legacy, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{".complete", "weights"} {
		if err := os.WriteFile(filepath.Join(legacy, f), []byte("unkeyed"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if ready(v1) {
		t.Fatal("the engine starts before any download (on an unkeyed copy)")
	}
	download(v1)
	for _, f := range []string{".complete", "weights"} {
		if _, err := os.Stat(filepath.Join(legacy, f)); err == nil {
			t.Errorf("the unkeyed copy's %s is left in the cache", f)
		}
	}
	download(v1)
	if got := recorded(); len(got) != 1 {
		t.Errorf("two runs for one source copied %v, want one copy", got)
	}
	if !ready(v1) {
		t.Error("the engine does not start after its download")
	}
	if ready(v2) {
		t.Error("the engine for the new source starts on the old source's weights")
	}
	download(v2)
	if got := recorded(); len(got) != 2 || !strings.HasSuffix(got[1], "llama/v2") {
		t.Errorf("after a new source the copies were %v, want the new source copied", got)
	}
	if !ready(v2) {
		t.Error("the engine for the new source does not start after its download")
	}
	url := strings.ReplaceAll(get(serving.VLLMValues(v2), "servingEngineSpec", "modelSpec").([]any)[0].(map[string]any)["modelURL"].(string), serving.WeightsPath, cache)
	if b, err := os.ReadFile(filepath.Join(url, "weights")); err != nil || !strings.HasSuffix(strings.TrimSpace(string(b)), "llama/v2") {
		t.Errorf("the engine for the new source loads %s: %q, %v", url, b, err)
	}
}
