package sizing

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/models"
)

// What no oracle covers follows the table: DeepSeek V3's MLA until a
// measured model has it, a GPU without fitted efficiencies, and nothing
// for a dense GQA model or a GQA mixture of experts on a fitted GPU.
func TestUncovered(t *testing.T) {
	t.Parallel()
	card := func(name string) models.Card {
		c, ok := models.Known.Lookup(name)
		if !ok {
			t.Fatalf("%s: not in the catalog", name)
		}
		return c
	}
	withDeepSeek := append([]Oracle{{Model: "deepseek-v3"}}, Oracles...)
	for _, tc := range []struct {
		name    string
		oracles []Oracle
		model   string
		gpu     catalog.GPU
		want    []string
	}{
		{"dense on a fitted GPU", Oracles, "llama-3.1-70b", catalog.H100SXM, nil},
		{"GQA experts", Oracles, "mixtral-8x7b", catalog.A100SXM80, nil},
		{"MLA", Oracles, "deepseek-v3", catalog.H200SXM, []string{"deepseek-v3's MLA attention: no measured model has it"}},
		{"MLA once measured", withDeepSeek, "deepseek-v3", catalog.H200SXM, nil},
		{"a borrowed GPU", Oracles, "llama-3.1-8b", catalog.T4,
			[]string{"the " + catalog.T4.Model + ": no measurement calibrates it; it borrows the A100 SXM's efficiencies"}},
		{"no experts measured", []Oracle{{Model: "llama-3.1-8b"}}, "mixtral-8x7b", catalog.H100SXM,
			[]string{"mixtral-8x7b's mixture of experts: no measured model has one"}},
	} {
		got := Calibrated.uncovered(kindsOf(tc.oracles), card(tc.model), tc.gpu)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	if got := Calibrated.Uncovered(card("deepseek-v3"), catalog.H200SXM); len(got) != 1 {
		t.Errorf("the committed table: deepseek-v3 on the H200 uncovered %q, want its MLA named", got)
	}
}
