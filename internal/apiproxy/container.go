package apiproxy

import (
	"github.com/natron/gpu-node-pools/internal/podsecurity"
)

// Volumes of a proxy's pod: its Caddyfile (a ConfigMap, no secret in it:
// keys come from Secrets as environment variables) and its scratch.
const (
	ConfigVolume = "proxy-config"
	TmpVolume    = "proxy-tmp"
	ConfigDir    = "/etc/caddy"
)

// Port is a named port the proxy listens on.
type Port struct {
	Name string
	Port int
}

// Key is one key the proxy checks: its environment variable, from a
// Secret's field.
type Key struct {
	Env, Secret, Field string
}

// Container is the proxy's container. Caddy writes only under
// XDG_*_HOME, on the scratch volume. The Caddy image sets
// cap_net_bind_service=+ep on its binary, so with every capability
// dropped exec fails with EPERM (caddyserver/caddy-docker issue 396):
// NET_BIND_SERVICE, the one capability the restricted profile lets a pod
// add, is added back. sidecar makes it a native sidecar (an init
// container that keeps running), which starts before the model server
// and stops after it.
func Container(name, image, tmpPath string, ports []Port, keys []Key, sidecar bool) map[string]any {
	sc := podsecurity.ContainerContext(true)
	sc["capabilities"] = map[string]any{"drop": []any{"ALL"}, "add": []any{"NET_BIND_SERVICE"}}
	env := []any{
		map[string]any{"name": "XDG_CONFIG_HOME", "value": tmpPath + "/config"},
		map[string]any{"name": "XDG_DATA_HOME", "value": tmpPath + "/data"},
	}
	for _, k := range keys {
		env = append(env, map[string]any{"name": k.Env, "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": k.Secret, "key": k.Field}}})
	}
	var ps []any
	for _, p := range ports {
		ps = append(ps, map[string]any{"name": p.Name, "containerPort": p.Port, "protocol": "TCP"})
	}
	c := map[string]any{
		"name": name, "image": image,
		"command":         []any{"caddy", "run", "--config", ConfigDir + "/Caddyfile", "--adapter", "caddyfile"},
		"ports":           ps,
		"env":             env,
		"securityContext": sc,
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "50m", "memory": "64Mi"},
			"limits":   map[string]any{"memory": "256Mi"},
		},
		"startupProbe": map[string]any{"tcpSocket": map[string]any{"port": ports[0].Port}, "periodSeconds": 2, "failureThreshold": 30},
		"volumeMounts": []any{
			map[string]any{"name": ConfigVolume, "mountPath": ConfigDir, "readOnly": true},
			map[string]any{"name": TmpVolume, "mountPath": tmpPath},
		},
	}
	if sidecar {
		c["restartPolicy"] = "Always"
	}
	return c
}

// Volumes are the proxy's volumes, its Caddyfile from configMap.
func Volumes(configMap string) []any {
	return []any{
		map[string]any{"name": ConfigVolume, "configMap": map[string]any{"name": configMap}},
		podsecurity.ScratchVolume(TmpVolume, "64Mi"),
	}
}
