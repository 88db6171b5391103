package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The dev stack's rendered trees (workload, management, gitops), as the
// real engine writes them, are byte for byte the committed ones: each
// file's SHA-256 is in testdata/golden/rendered-dev.json. The trees hold
// the charts' output too, so digests keep the golden small; on a
// difference the test names the files and keeps the new tree to compare.
func TestRenderedTreesMatchGolden(t *testing.T) {
	t.Parallel()
	dir, _ := renderDev(t)
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sum := sha256.Sum256(b)
		got[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 50 {
		t.Fatalf("the render wrote only %d files", len(got))
	}
	file := filepath.Join("testdata", "golden", "rendered-dev.json")
	if *updateGolden {
		b, _ := json.MarshalIndent(got, "", " ")
		if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (go test ./tests -run TestRenderedTreesMatchGolden -update-golden writes it)", err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		keep := filepath.Join(os.TempDir(), "rendered-dev-now")
		_ = os.RemoveAll(keep)
		_ = os.CopyFS(keep, os.DirFS(dir))
		t.Errorf("the dev stack renders other files than %s (-golden +now; the new tree is in %s):\n%s", file, keep, diff)
	}
}
