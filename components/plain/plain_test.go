package plain

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func TestInput(t *testing.T) {
	t.Parallel()
	got := Input(map[string]any{
		"s": "x", "b": true, "i": 3, "whole": 2.0, "frac": 0.5, "nil": nil,
		"list": []any{"a", 1.0}, "labels": map[string]string{"k": "v"},
	})
	want := pulumi.Map{
		"s": pulumi.String("x"), "b": pulumi.Bool(true), "i": pulumi.Int(3), "whole": pulumi.Int(2), "frac": pulumi.Float64(0.5),
		"list": pulumi.Array{pulumi.String("a"), pulumi.Int(1)}, "labels": pulumi.StringMap{"k": pulumi.String("v")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Input mismatch (-want +got):\n%s", diff)
	}
}

func TestSortedKeys(t *testing.T) {
	t.Parallel()
	if got := SortedKeys(map[string]int{"b": 1, "a": 2, "c": 3}); !cmp.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("SortedKeys = %v", got)
	}
}
