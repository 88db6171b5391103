package kubeapi

import (
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/natron/gpu-node-pools/internal/testkit/proc"
)

// Seed is the state a kind of cluster starts with, prepared once per test
// process and copied into each server started from it (WithSeed): the
// CRDs of the operators a customer's platform runs are tens of large
// documents, and creating them was most of an API server's start-up work
// (15–25 s of CPU each). The copy is etcd's own data, so the server
// starts with exactly what Prepare left, as if Prepare had run on it.
type Seed struct {
	// Name names the seed in messages and its directory.
	Name string
	// Prepare makes the state, on a server started with Start. It must
	// not depend on the test that happens to run it first.
	Prepare func(t testing.TB, s *Server)

	once    sync.Once
	dir     string   // etcd's data, stopped cleanly; empty when Prepare failed
	apis    []string // /apis/<group>/<version> of every CRD version served
	skipped bool     // Prepare skipped for want of a prerequisite
}

// state prepares the seed on first use and is the API paths its CRDs
// serve; a seed whose preparation failed fails every test that asks.
func (sd *Seed) state(t testing.TB) []string {
	t.Helper()
	sd.once.Do(func() {
		// runs as the test ends too, should Prepare skip it
		defer func() { sd.skipped = t.Skipped() }()
		sd.prepare(t)
	})
	if sd.skipped {
		t.Skipf("skipping: cluster seed %s lacks a prerequisite: see the first test that used it", sd.Name)
	}
	if sd.dir == "" {
		t.Fatalf("cluster seed %s could not be prepared: see the first test that used it", sd.Name)
	}
	return sd.apis
}

func (sd *Seed) prepare(t testing.TB) {
	t.Helper()
	srv := startServer(t, apiControllers, nil)
	sd.Prepare(t, srv)
	var crds struct {
		Items []struct {
			Spec struct {
				Group    string
				Versions []struct {
					Name   string
					Served bool
				}
			}
		}
	}
	srv.GetJSON(t, &crds, "customresourcedefinitions")
	var apis []string
	for _, c := range crds.Items {
		for _, v := range c.Spec.Versions {
			if v.Served {
				apis = append(apis, "/apis/"+c.Spec.Group+"/"+v.Name)
			}
		}
	}
	srv.stop()
	dir := filepath.Join(proc.RunDir(), "seed-"+sd.Name)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := copyDir(filepath.Join(srv.dir, "etcd"), dir); err != nil {
		t.Fatalf("seed %s: %v", sd.Name, err)
	}
	sd.dir, sd.apis = dir, apis
}

// waitServed waits until the server serves every API path: a server
// started on a seed knows its CRDs at once (its readyz waits for the
// CRD informer) but installs their handlers just after.
func (s *Server) waitServed(t testing.TB, apis []string) {
	t.Helper()
	client := adminClient(t, s.pki)
	deadline := time.Now().Add(time.Minute)
	for _, path := range apis {
		for {
			resp, err := client.Get(s.URL + path)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
				err = fmt.Errorf("%s", resp.Status)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not served a minute after start: %v", path, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// copyDir copies a directory tree (etcd's data: a few files).
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}
