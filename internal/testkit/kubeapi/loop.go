package kubeapi

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config is a client configuration for the server's admin, with room for
// the bursts of a simulated controller's pass.
func (s *Server) Config(t testing.TB) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	return cfg
}

// Every runs step in the background every interval, as a controller's
// loop, until the test ends (its cleanup waits for the pass under way).
func Every(t testing.TB, interval time.Duration, step func(context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			step(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(interval):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}
