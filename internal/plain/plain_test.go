package plain

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
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

type noMocks struct{}

func (noMocks) NewResource(a pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	return a.Name + "-id", a.Inputs, nil
}
func (noMocks) Call(pulumi.MockCallArgs) (resource.PropertyMap, error) { return nil, nil }

// A core-group object is refused before registration with what to use
// instead; a group object registers.
func TestObjectRefusesTheCoreGroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		api, want string
	}{
		{"v1", `apiVersion "v1" is the core group's`},
		{"networking.k8s.io/v1", ""},
	} {
		err := pulumi.RunErr(func(ctx *pulumi.Context) error {
			_, err := Object(ctx, "x", map[string]any{"apiVersion": tc.api, "kind": "Thing", "metadata": map[string]any{"name": "x"}})
			return err
		}, pulumi.WithMocks("p", "s", noMocks{}))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.api, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.api, err, tc.want)
		}
	}
}
