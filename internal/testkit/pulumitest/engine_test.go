package pulumitest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A copy takes the sources, not what a developer's make targets left in
// the checkout (the directories .gitignore names), nor the tests.
func TestProgramDirsLeaveOutIgnoredDirectories(t *testing.T) {
	root := t.TempDir()
	ignore := "# outputs\n/rendered/\n/rendered-*/\n/.pulumi-state/\n/stackctl\n*.test\n/deep/dir/\n"
	if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte(ignore), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{".ci", ".git", ".github", ".pulumi-state/bin", "cmd", "components", "deep", "rendered", "rendered-acme", "stackctl", "tests"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// /stackctl names the binary, not a directory; /deep/dir/ is not at the top
	want := []string{".ci", "cmd", "components", "deep", "stackctl"}
	if got := programDirs(t, root); !slices.Equal(got, want) {
		t.Errorf("programDirs = %v, want %v", got, want)
	}
}
