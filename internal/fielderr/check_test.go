package fielderr

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestMessages(t *testing.T) {
	t.Parallel()
	p := field.NewPath("gpu-node-pools:pools").Index(1)
	price := 1.5
	for _, tc := range []struct {
		err  *field.Error
		want string
	}{
		{Invalid(p.Child("name"), "A100", "must be lowercase"), `gpu-node-pools:pools[1].name: must be lowercase, got "A100"`},
		{Invalid(p.Child("maxNodes"), 0, "must be between %d and %d", 1, 1000), `gpu-node-pools:pools[1].maxNodes: must be between 1 and 1000, got 0`},
		{Forbidden(p.Child("zones"), []string{"1"}, "only on target aks"), `gpu-node-pools:pools[1].zones: only on target aks, got ["1"]`},
		{Forbidden(p.Child("spotMaxPrice"), &price, "only on target aks"), `gpu-node-pools:pools[1].spotMaxPrice: only on target aks, got 1.5`},
		{Required(p.Child("kubeconfig"), "required unless renderDir is set"), `gpu-node-pools:pools[1].kubeconfig: required unless renderDir is set, got nothing`},
		{NotSupported(p.Child("migProfile"), "MIG5g", []string{"MIG1g", "MIG7g"}), `gpu-node-pools:pools[1].migProfile: must be one of MIG1g, MIG7g, got "MIG5g"`},
		{TypeInvalid(p.Child("minNodes"), "two", "a whole number", "a JSON string"), `gpu-node-pools:pools[1].minNodes: must be a whole number, got a JSON string`},
	} {
		if got := Message(tc.err); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
	if errs := OneOf(p, "aks", []string{"aks", "natron"}); len(errs) != 0 {
		t.Errorf("OneOf refused an allowed value: %v", errs)
	}
}

// Reported finds a problem at a path or under it, and nowhere else: a
// pool's problems block checks of that pool, not of its neighbour.
func TestReported(t *testing.T) {
	t.Parallel()
	pools := field.NewPath("gpu-node-pools:pools")
	errs := field.ErrorList{Invalid(pools.Index(1).Child("labels").Child("team"), "x", "bad")}
	for p, want := range map[*field.Path]bool{
		pools:                            true,
		pools.Index(1):                   true,
		pools.Index(1).Child("labels"):   true,
		pools.Index(0):                   false,
		pools.Index(10):                  false,
		pools.Index(1).Child("labelsX"):  false,
		field.NewPath("gpu-node-pools"):  false,
		pools.Index(1).Child("maxNodes"): false,
	} {
		if got := Reported(errs, p); got != want {
			t.Errorf("Reported(%s) = %v, want %v", p, got, want)
		}
	}
}

// Label rules are apimachinery's: a prefix must be a DNS subdomain, a
// name and a value at most 63 characters.
func TestLabels(t *testing.T) {
	t.Parallel()
	reserved := func(k string) bool { return k == "owned/x" }
	errs := Labels(field.NewPath("labels"), map[string]string{
		"team": "ml", "acme.example/tier": "", "Bad Key": "x", "owned/x": "y", "long": strings.Repeat("a", 64),
	}, reserved, []string{"owned"})
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	if diff := cmp.Diff([]string{"labels.Bad Key", "labels.long", "labels.owned/x"}, got); diff != "" {
		t.Errorf("problems at (-want +got):\n%s", diff)
	}
}
