package netsim

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
)

// listen binds a stand-in for a container in the pod at host:port: the
// pod's address and loopback for 0.0.0.0 (or no host), loopback alone
// for 127.0.0.1.
func (c *Cluster) listen(p *pod, host string, port int, h http.Handler) {
	srv := httptest.NewServer(h)
	c.t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	p.loopback[port] = addr
	if host == "" || host == "0.0.0.0" || host == "::" {
		p.public[port] = addr
	}
}

// flag is a command-line flag's value (vLLM's argparse: the last one
// given wins).
func flag(args []any, name, def string) string {
	v := def
	for i, a := range args {
		s := fmt.Sprint(a)
		if s == name && i+1 < len(args) {
			v = fmt.Sprint(args[i+1])
		} else if strings.HasPrefix(s, name+"=") {
			v = strings.TrimPrefix(s, name+"=")
		}
	}
	return v
}

// run starts a pod's containers: the stand-ins first, where their
// processes would bind, then each proxy, its upstreams pointed at what
// listens on the pod's loopback or, for a Service's name, at the
// network, which judges the pod's connection.
func (c *Cluster) run(p *pod) error {
	var proxies []map[string]any
	for _, ctr := range p.containers() {
		env, err := c.env(p.ns, ctr)
		if err != nil {
			return err
		}
		args := append(anyList(ctr["command"]), anyList(ctr["args"])...)
		switch {
		case imageIs(ctr, "caddy"):
			proxies = append(proxies, ctr)
		case imageIs(ctr, "vllm/vllm-openai"):
			// vLLM's defaults: --host None (every interface), --port 8000
			key, _ := lookup(env, "VLLM_API_KEY")
			v := &VLLM{Key: flag(args, "--api-key", key)}
			port, _ := strconv.Atoi(flag(args, "--port", "8000"))
			c.listen(p, flag(args, "--host", ""), port, v)
			c.VLLMs[p.ns+"/"+p.name] = v
		case imageIs(ctr, "ollama/ollama"):
			// Ollama's default OLLAMA_HOST is 127.0.0.1:11434 (envconfig)
			hostport, ok := lookup(env, "OLLAMA_HOST")
			if !ok {
				hostport = "127.0.0.1:11434"
			}
			host, port, _ := net.SplitHostPort(hostport)
			n, _ := strconv.Atoi(port)
			o := &Ollama{}
			c.listen(p, host, n, o)
			c.Ollamas[p.ns+"/"+p.name] = o
		case imageIs(ctr, "ghcr.io/kedacore/http-add-on-interceptor"):
			port, _ := lookup(env, "KEDA_HTTP_PROXY_PORT")
			n, _ := strconv.Atoi(port)
			c.listen(p, "", n, c.interceptor(p))
		}
	}
	for _, ctr := range proxies {
		if err := c.runProxy(p, ctr); err != nil {
			return err
		}
	}
	return nil
}

var upstreamRe = regexp.MustCompile(`reverse_proxy ([^ {\n]+)`)

// runProxy runs a proxy container's Caddyfile (from the ConfigMap its
// pod mounts there) in Caddy, in a process with the container's
// environment.
func (c *Cluster) runProxy(p *pod, ctr map[string]any) error {
	file, err := c.mountedConfig(p, ctr)
	if err != nil {
		return err
	}
	env, _ := c.env(p.ns, ctr)
	for _, m := range upstreamRe.FindAllStringSubmatch(file, -1) {
		up := m[1]
		host, port, err := net.SplitHostPort(up)
		if err != nil {
			return fmt.Errorf("upstream %s: %w", up, err)
		}
		n, _ := strconv.Atoi(port)
		var local string
		switch {
		case host == "127.0.0.1" || host == "localhost":
			local = p.loopback[n]
			if local == "" { // nothing listens: refused
				free, err := freePort()
				if err != nil {
					return err
				}
				local = fmt.Sprintf("127.0.0.1:%d", free)
			}
		default:
			local = c.forwarder(Peer{p.ns, p.labels}, up)
		}
		file = strings.ReplaceAll(file, "reverse_proxy "+up, "reverse_proxy "+local)
	}
	addrs, err := runOnFreePorts(c.t, file, env)
	if err != nil {
		return fmt.Errorf("proxy %v: %w", ctr["name"], err)
	}
	for port, addr := range addrs {
		p.public[port], p.loopback[port] = addr, addr
	}
	return nil
}

// mountedConfig is the Caddyfile of the ConfigMap mounted where the
// proxy reads it.
func (c *Cluster) mountedConfig(p *pod, ctr map[string]any) (string, error) {
	for _, m := range anyList(ctr["volumeMounts"]) {
		if dig(m, "mountPath") != "/etc/caddy" {
			continue
		}
		for _, v := range anyList(p.spec["volumes"]) {
			if dig(v, "name") != dig(m, "name") {
				continue
			}
			name, _ := dig(v, "configMap", "name").(string)
			cm := c.object("ConfigMap", p.ns, name)
			if cm == nil {
				return "", fmt.Errorf("container %v mounts ConfigMap %s, which the stack does not have", ctr["name"], name)
			}
			file, _ := dig(cm, "data", "Caddyfile").(string)
			return file, nil
		}
	}
	return "", fmt.Errorf("container %v mounts no Caddyfile at /etc/caddy", ctr["name"])
}

// forwarder is a local address standing for a Service's name as seen
// from a pod: each connection to it is judged as the pod's.
func (c *Cluster) forwarder(from Peer, hostport string) string {
	ns, name, port, err := serviceName(hostport)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		resp, herr := c.toService(from, ns, name, port, r)
		if herr != nil {
			http.Error(w, "dial "+hostport+": "+herr.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	c.t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// interceptor stands in for the HTTP add-on's interceptor: it routes by
// the Host header alone (port stripped) to the Service of the
// InterceptorRoute that lists the host, connecting from its own pod
// (keda-add-ons-http 0.15.0; its key-less routing is why the gateway
// exists).
func (c *Cluster) interceptor(p *pod) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		for _, o := range c.objs {
			if o["kind"] != "InterceptorRoute" {
				continue
			}
			for _, rule := range anyList(dig(o, "spec", "rules")) {
				for _, h := range anyList(dig(rule, "hosts")) {
					if h != host {
						continue
					}
					svc := fmt.Sprintf("%v.%s.svc:%d", dig(o, "spec", "target", "service"), meta(o, "namespace"), toInt(dig(o, "spec", "target", "port")))
					ns, name, port, _ := serviceName(svc)
					resp, err := c.toService(Peer{p.ns, p.labels}, ns, name, port, r)
					if err != nil {
						http.Error(w, err.Error(), http.StatusBadGateway)
						return
					}
					defer resp.Body.Close()
					w.WriteHeader(resp.StatusCode)
					_, _ = io.Copy(w, resp.Body)
					return
				}
			}
		}
		http.Error(w, "no route for host "+host, http.StatusNotFound)
	})
}
