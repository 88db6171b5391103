package fleet

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("c%03d", i)
	}
	return out
}

// Shards hold at most size stacks, as even as that allows, every stack
// once and in order.
func TestShards(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		stacks, size int
		want         []int // stacks per shard
	}{
		{200, 20, []int{20, 20, 20, 20, 20, 20, 20, 20, 20, 20}},
		{21, 20, []int{10, 11}},
		{5, 10, []int{5}},
		{0, 10, nil},
		{3, 1, []int{1, 1, 1}},
	} {
		m := Shards(names(tc.stacks), tc.size)
		var got []int
		var all []string
		for i, s := range m.Include {
			f := strings.Fields(s.Stacks)
			got = append(got, len(f))
			all = append(all, f...)
			if s.Shard != i+1 || len(f) > tc.size {
				t.Errorf("%d by %d: shard %+v", tc.stacks, tc.size, s)
			}
		}
		if diff := cmp.Diff(tc.want, got); diff != "" || strings.Join(all, " ") != strings.Join(names(tc.stacks), " ") {
			t.Errorf("%d by %d: (-want +got)\n%s", tc.stacks, tc.size, diff)
		}
		if m.Include == nil {
			t.Errorf("%d by %d: a nil include marshals to null", tc.stacks, tc.size)
		}
	}
}

// A change to stack files previews those stacks; any other change, all.
func TestAffected(t *testing.T) {
	t.Parallel()
	all := []string{"acme", "contoso", "dev", "prod"}
	for _, tc := range []struct {
		changed []string
		want    []string
	}{
		{[]string{"Pulumi.acme.yaml"}, []string{"acme"}},
		{[]string{"Pulumi.prod.yaml", "Pulumi.acme.yaml", ""}, []string{"acme", "prod"}},
		{[]string{"Pulumi.gone.yaml"}, nil}, // a removed stack: nothing to preview
		{[]string{"Pulumi.acme.yaml", "components/serving/values.go"}, all},
		{[]string{"go.mod"}, all},
		{[]string{"Pulumi.yaml"}, all}, // the project file: every stack's defaults
		{[]string{"docs/Pulumi.acme.yaml"}, all},
		{[]string{".ci/shared-assets.sha256"}, all},
	} {
		if diff := cmp.Diff(tc.want, Affected(tc.changed, all)); diff != "" {
			t.Errorf("%v: (-want +got)\n%s", tc.changed, diff)
		}
	}
}

// Each wave holds its stacks; a stack naming no wave is in the last.
func TestInWaves(t *testing.T) {
	t.Parallel()
	members := []Member{{"a", Canary}, {"b", (Spec{}).WaveOf()}, {"c", "1"}, {"d", "3"}, {"e", "1"}}
	w := InWaves(members, 10)
	got := map[string]string{}
	for k, v := range w {
		if v.Count > 0 {
			got[k] = v.Matrix.Include[0].Stacks
		}
	}
	want := map[string]string{Canary: "a", "1": "c e", "3": "b d"}
	if diff := cmp.Diff(want, got); diff != "" || w["2"].Count != 0 || w["2"].Matrix.Include == nil {
		t.Errorf("(-want +got)\n%s\n%+v", diff, w["2"])
	}
}

// A wave outside canary, 1, 2, 3 is refused, naming the key and the
// allowed values; too many jobs for a matrix are refused with the size
// that fits.
func TestValidate(t *testing.T) {
	t.Parallel()
	errs := Spec{Wave: "4"}.Validate(field.NewPath("gpu-node-pools:fleet"))
	if len(errs) != 1 || errs[0].Error() != `gpu-node-pools:fleet.wave: Unsupported value: "4": must be one of canary, 1, 2, 3, got "4"` {
		t.Errorf("%v", errs)
	}
	if errs := (Spec{Wave: Canary}).Validate(nil); len(errs) != 0 {
		t.Errorf("%v", errs)
	}
	if err := Validate(1000, 3); err == nil || !strings.Contains(err.Error(), "334 jobs, above the 256 a GitHub Actions matrix holds; use 4 or more") {
		t.Errorf("%v", err)
	}
	if Validate(200, 0) == nil || Validate(200, 1) != nil {
		t.Errorf("shard size 0 passes, or 200 jobs of 1 do not: %v, %v", Validate(200, 0), Validate(200, 1))
	}
}
