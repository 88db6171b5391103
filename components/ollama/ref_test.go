package ollama_test

import (
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/components/ollama"
)

// References are read as Ollama reads them (types/model/name.go, ParseName).
func TestParseRef(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want, short, err string
	}{
		{in: "llama3.2:3b", want: "registry.ollama.ai/library/llama3.2:3b", short: "llama3.2:3b"},
		{in: "llama3.1", want: "registry.ollama.ai/library/llama3.1:latest", short: "llama3.1:latest"},
		{in: "acme/tuned:8b-q8_0", want: "registry.ollama.ai/acme/tuned:8b-q8_0", short: "registry.ollama.ai/acme/tuned:8b-q8_0"},
		{in: "hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M", want: "hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M", short: "hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M"},
		{in: "a/b/c/d", err: "4 path parts"},
		{in: "llama3:8b q4", err: "not an Ollama tag"},
		{in: ":8b", err: "not an Ollama name"},
		{in: "s3://models/llama", err: "is a URL"},
	} {
		r, err := ollama.ParseRef(tc.in)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case r.String() != tc.want || r.Short() != tc.short:
			t.Errorf("%q: %s / %s, want %s / %s", tc.in, r, r.Short(), tc.want, tc.short)
		}
	}
}
