package sizing

import (
	"fmt"
	"strings"

	"github.com/natron/gpu-node-pools/internal/catalog"
	"github.com/natron/gpu-node-pools/internal/models"
)

// kinds are the attention kinds and whether a mixture of experts some
// oracles' models have: what the held-out bands have been seen to hold
// for.
type kinds struct {
	attention map[models.Attention]bool
	experts   bool
}

func kindsOf(oracles []Oracle) kinds {
	out := kinds{attention: map[models.Attention]bool{}}
	for _, o := range oracles {
		if card, ok := models.Known.Lookup(o.Model); ok {
			out.attention[card.Kind()] = true
			out.experts = out.experts || card.Experts > 0
		}
	}
	return out
}

// judged are the oracle table's kinds.
var judged = kindsOf(Oracles)

// Uncovered says what of a model on a GPU no oracle covers, in words: a
// GPU with no fitted efficiencies (it borrows the fallback's), an
// attention kind or a mixture of experts no oracle's model has. Its
// figures are then the roofline's alone, and its ranges the other
// setups' errors, not its own (DeepSeek V3's MLA: docs/sizing.md).
func (c Calibration) Uncovered(card models.Card, g catalog.GPU) []string {
	return c.uncovered(judged, card, g)
}

func (c Calibration) uncovered(judged kinds, card models.Card, g catalog.GPU) []string {
	var out []string
	if _, ok := c.Of(g); !ok {
		out = append(out, fmt.Sprintf("the %s: no measurement calibrates it; it borrows the A100 SXM's efficiencies", g.Model))
	}
	if k := card.Kind(); !judged.attention[k] {
		out = append(out, fmt.Sprintf("%s's %s attention: no measured model has it", card.Name, strings.ToUpper(string(k))))
	}
	if card.Experts > 0 && !judged.experts {
		out = append(out, fmt.Sprintf("%s's mixture of experts: no measured model has one", card.Name))
	}
	return out
}
