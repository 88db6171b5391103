package automation

import (
	"errors"
	"testing"
)

func TestHeadline(t *testing.T) {
	for _, c := range []struct{ err, want string }{
		{"stack acme: up: failed to run update: exit status 1\ncode: 1\nstderr: error: the stack is currently locked by 1 lock(s).\n  azblob://x",
			"stack acme: up: the stack is currently locked by 1 lock(s).\nstack acme: up: failed to run update: exit status 1\ncode: 1\nstderr: error: the stack is currently locked by 1 lock(s).\n  azblob://x"},
		{"stack acme: up: failed to run update: exit status 1\ncode: 1\nstderr: \n  error: boom", "stack acme: up: boom\nstack acme: up: failed to run update: exit status 1\ncode: 1\nstderr: \n  error: boom"},
		{"stack acme: gpu-node-pools:pools[0].maxNodes: must be >= minNodes", "stack acme: gpu-node-pools:pools[0].maxNodes: must be >= minNodes"},
	} {
		if got := headline(errors.New(c.err)); got != c.want {
			t.Errorf("headline(%q)\n got %q\nwant %q", c.err, got, c.want)
		}
	}
}
