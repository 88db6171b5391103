package sizing

import "strings"

// Latency is what a request sees on one replica with concurrency streams
// in flight, each of prompt tokens in and output tokens out.
type Latency struct {
	// ITL is the time between output tokens (vLLM's ITL and TPOT), TTFT to
	// the first, E2E to the last: seconds.
	ITL, TTFT, E2E float64
	// TokensPerSecond is the replica's output rate over all its streams.
	TokensPerSecond float64
}

// ChunkTokens is vLLM's default max_num_batched_tokens for an online
// server: 8192 on GPUs of 70 GiB or more other than the A100, else 2048
// (EngineArgs._set_default_args, vllm/engine/arg_utils.py, v0.10 and
// v0.11). A prompt longer than that is prefilled over several steps, each
// carrying the other streams' decodes (chunked prefill).
func (d Deployment) ChunkTokens() int {
	if d.SKU.GPU.MemoryGB >= 70 && !strings.Contains(d.SKU.GPU.Model, "A100") {
		return 8192
	}
	return 2048
}

// Under is the steady state of concurrency streams, each asking a prompt
// of prompt tokens and reading output tokens, a new request as soon as
// one ends (a benchmark's --max-concurrency).
//
// Chunked prefill puts the other streams' prefills into the decode
// steps: each of the other concurrency-1 streams prefills once per output
// tokens of this one, so the time between tokens is a decode step of the
// batch plus that share of prefill. A new prompt's prefill runs in
// ceil(prompt/chunk) steps, each also carrying the others' decodes, after
// waiting for the prefills already running: the engine prefills a share
// u of the time, and a prefill of fixed length S waits u·S / (2(1-u)) on
// average (the Pollaczek-Khinchine formula for deterministic service).
func (d Deployment) Under(concurrency, prompt, output int) Latency {
	c, out := max(concurrency, 1), max(output, 1)
	context := prompt + out/2
	prefill := d.Prefill(prompt)
	itl := d.DecodeStep(c, context) + float64(c-1)*prefill/float64(out)
	ttft := prefill + d.Engine.RequestSeconds
	if c > 1 {
		ttft += float64(ceilDiv(max(prompt, 1), d.ChunkTokens())) * d.DecodeStep(c-1, context)
		cycle := ttft + float64(out-1)*itl
		if u := float64(c-1) * prefill / cycle; u < 1 {
			ttft += u * prefill / (2 * (1 - u))
		}
	}
	e2e := ttft + float64(out-1)*itl
	return Latency{ITL: itl, TTFT: ttft, E2E: e2e, TokensPerSecond: float64(c*out) / e2e}
}

// Burst is the mean time to first token when concurrency prompts arrive
// at once and are prefilled one after another, the k-th waiting for k
// prefills: (concurrency+1)/2 of them on average, and the served
// request's cost. A benchmark's closed loop that starts every stream
// together stays near it; streams that drift apart wait far less. The
// held-out first tokens under load never exceeded it by much (Band's
// Ceiling), which bounds what Under cannot follow.
func (d Deployment) Burst(concurrency, prompt int) float64 {
	return float64(max(concurrency, 1)+1)/2*d.Prefill(prompt) + d.Engine.RequestSeconds
}

// Batch is the end-to-end latency of batch requests that arrive together
// (vLLM's latency benchmark): one prefill of all their prompts, then
// output-1 decode steps of the whole batch.
func (d Deployment) Batch(batch, prompt, output int) float64 {
	return d.prefill(batch, prompt) + float64(max(output, 1)-1)*d.DecodeStep(batch, prompt+output/2)
}
