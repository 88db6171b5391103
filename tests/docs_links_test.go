package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
)

// The README is the user's path, short enough to read through; the
// references are pages under docs/, one link away.
const readmeMaxLines = 600

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
)

// slug is GitHub's anchor for a heading.
func slug(heading string) string {
	s := strings.ToLower(heading)
	s = regexp.MustCompile(`[^a-z0-9 _-]`).ReplaceAllString(s, "")
	return strings.ReplaceAll(s, " ", "-")
}

// Every relative link of the README and the docs pages reaches a file of
// the project, and its anchor a heading of that file; the README stays
// under readmeMaxLines and links every docs page.
func TestDocsLinks(t *testing.T) {
	t.Parallel()
	root := pulumitest.RepoRoot()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs pages: %v", err)
	}
	files := append([]string{filepath.Join(root, "README.md")}, pages...)
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(link, "#")
			target := f
			if path != "" {
				target = filepath.Join(filepath.Dir(f), path)
			}
			rel, _ := filepath.Rel(root, f)
			body, err := os.ReadFile(target)
			if err != nil {
				t.Errorf("%s: link %s: %v", rel, link, err)
				continue
			}
			checked++
			if anchor == "" {
				continue
			}
			found := false
			for _, h := range mdHeading.FindAllStringSubmatch(string(body), -1) {
				found = found || slug(h[1]) == anchor
			}
			if !found {
				t.Errorf("%s: link %s: no heading with anchor %q", rel, link, anchor)
			}
		}
	}
	if checked < len(pages) {
		t.Errorf("checked %d links, fewer than the %d docs pages", checked, len(pages))
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n >= readmeMaxLines {
		t.Errorf("README.md has %d lines, want under %d: move references to docs/", n, readmeMaxLines)
	}
	for _, p := range pages {
		if !strings.Contains(string(readme), "](docs/"+filepath.Base(p)) {
			t.Errorf("README.md does not link docs/%s", filepath.Base(p))
		}
	}
}

func TestSlug(t *testing.T) {
	t.Parallel()
	for h, want := range map[string]string{
		"What gets rendered and how to deliver it": "what-gets-rendered-and-how-to-deliver-it",
		"A new customer stack, step by step":       "a-new-customer-stack-step-by-step",
		"`target`":                                 "target",
		"batchJobs":                                "batchjobs",
	} {
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
}
