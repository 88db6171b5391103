package netsim

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
)

// Seen is a request a stand-in received.
type Seen struct {
	Method, Path, Authorization string
}

// recorder keeps what a stand-in received.
type recorder struct {
	mu   sync.Mutex
	seen []Seen
}

func (r *recorder) record(req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, Seen{req.Method, req.URL.Path, req.Header.Get("Authorization")})
}

// Seen is every request it received, in order.
func (r *recorder) Seen() []Seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Seen(nil), r.seen...)
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// VLLM stands in for vLLM's API server as strictly as vLLM is lax: with
// an API key set (VLLM_API_KEY) it checks "Authorization: Bearer <key>"
// on the /v1, /v2 and /inference paths alone, and serves every other
// path it has without one (vLLM docs/usage/security.md, "API Key
// Authentication Limitations": /invocations, /pooling, /classify,
// /score, /rerank, /tokenize, /detokenize, /pause, /update_weights, ...).
type VLLM struct {
	recorder
	Key string
}

// vllmPaths are the paths vLLM's API server routes (the same document's
// lists); anything else is 404.
var vllmPaths = map[string]bool{}

func init() {
	for _, p := range strings.Fields(`/v1/models /v1/chat/completions /v1/chat/completions/batch /v1/chat/completions/render
		/v1/completions /v1/completions/render /v1/embeddings /v1/audio/transcriptions /v1/audio/translations /v1/messages
		/v1/messages/count_tokens /v1/responses /v1/score /v1/rerank /v1/load_lora_adapter /v1/unload_lora_adapter
		/inference/v1/generate /v2/embed /v2/rerank /invocations /generative_scoring /pooling /classify /score /rerank
		/pause /resume /is_paused /scale_elastic_ep /is_scaling_elastic_ep /init_weight_transfer_engine /update_weights
		/get_world_size /tokenize /detokenize /health /ping /version /load /metrics`) {
		vllmPaths[p] = true
	}
}

var guarded = regexp.MustCompile(`^/(v1|v2|inference)(/|$)`)

func (v *VLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if v.Key != "" && guarded.MatchString(r.URL.Path) && r.Header.Get("Authorization") != "Bearer "+v.Key {
		reply(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
		return
	}
	v.record(r)
	if !vllmPaths[r.URL.Path] {
		reply(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
		return
	}
	reply(w, http.StatusOK, map[string]string{"served": r.URL.Path})
}

// Ollama stands in for Ollama's server: no authentication at all, its
// own API under /api (pull, delete, create, chat, generate, ...) and the
// OpenAI-compatible one under /v1 (ollama server/routes.go).
type Ollama struct{ recorder }

var ollamaPaths = regexp.MustCompile(`^(/|/api/[a-z]+|/v1/(chat/completions|completions|embeddings|models(/[^/]+)?))$`)

func (o *Ollama) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.record(r)
	if !ollamaPaths.MatchString(r.URL.Path) {
		reply(w, http.StatusNotFound, map[string]string{"error": "404 page not found"})
		return
	}
	if r.URL.Path == "/" {
		_, _ = w.Write([]byte("Ollama is running"))
		return
	}
	reply(w, http.StatusOK, map[string]string{"served": r.URL.Path})
}
