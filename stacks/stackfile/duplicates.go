package stackfile

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// duplicateKeys finds every mapping key set twice in a YAML document, as
// Pulumi refuses such a file ("mapping key ... already defined") where a
// plain decoder would keep the last value silently: a pasted second
// config: block or model list would then hide the first.
func duplicateKeys(b []byte) ([]string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	var out []string
	var walk func(n *yaml.Node, path []string)
	walk = func(n *yaml.Node, path []string) {
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for i, c := range n.Content {
				p := path
				if n.Kind == yaml.SequenceNode {
					p = append(path[:len(path):len(path)], fmt.Sprintf("[%d]", i))
				}
				walk(c, p)
			}
		case yaml.MappingNode:
			first := map[string]int{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				key := strings.Join(append(path[:len(path):len(path)], k.Value), ".")
				if line, ok := first[k.Value]; ok {
					out = append(out, fmt.Sprintf("key %s is set twice, on lines %d and %d: keep one (the file is read as if only the last were there)", key, line, k.Line))
				} else {
					first[k.Value] = k.Line
				}
				walk(n.Content[i+1], append(path[:len(path):len(path)], k.Value))
			}
		}
	}
	walk(&doc, nil)
	return out, nil
}
