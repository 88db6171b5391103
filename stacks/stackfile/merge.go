package stackfile

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Merge adds a fragment of stack config (keys as under a stack file's
// config:, such as gpu-plan's design) to a stack file's text, keeping the
// file's comments and layout: a key the file lacks is added; a list
// (pools, models) gets the fragment's items, refused when one has the name
// of an item already there; a block gets the keys it lacks, refused when
// a value differs. Every conflict is reported, and then nothing merges.
func Merge(file, fragment []byte) ([]byte, error) {
	var doc, frag yaml.Node
	if err := yaml.Unmarshal(file, &doc); err != nil {
		return nil, fmt.Errorf("stack file: %w", err)
	}
	if err := yaml.Unmarshal(fragment, &frag); err != nil {
		return nil, fmt.Errorf("design: %w", err)
	}
	if len(frag.Content) == 0 || frag.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("design: want stack config keys (gpu-plan --format yaml), got nothing of the kind")
	}
	cfg, err := configNode(&doc)
	if err != nil {
		return nil, err
	}
	// the design's summary line (gpu-plan's first comment) heads what it adds
	src := frag.Content[0]
	summary := firstLine(frag.HeadComment, src.HeadComment, keyComment(src))
	frag.HeadComment, src.HeadComment = "", ""
	if len(src.Content) > 0 {
		src.Content[0].HeadComment = ""
	}
	before := len(cfg.Content)
	var conflicts []string
	merged := mergeMapping(cfg, src, "", &conflicts)
	if len(conflicts) > 0 {
		return nil, errors.New("the design conflicts with the stack file:\n  " + strings.Join(conflicts, "\n  "))
	}
	if !merged {
		return file, nil
	}
	if summary != "" && len(cfg.Content) > before {
		cfg.Content[before].HeadComment = summary
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return out.Bytes(), enc.Close()
}

// configNode is the file's config: mapping, added when missing.
func configNode(doc *yaml.Node) (*yaml.Node, error) {
	if len(doc.Content) == 0 {
		doc.Kind = yaml.DocumentNode
		doc.Content = []*yaml.Node{{Kind: yaml.MappingNode}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, errors.New("stack file: not a mapping")
	}
	if v := lookup(root, "config"); v != nil {
		if v.Kind != yaml.MappingNode {
			return nil, errors.New("stack file: config: is not a mapping")
		}
		return v, nil
	}
	v := &yaml.Node{Kind: yaml.MappingNode}
	root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "config"}, v)
	return v, nil
}

func lookup(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// mergeMapping adds src's keys to dst, reporting whether anything changed.
func mergeMapping(dst, src *yaml.Node, path string, conflicts *[]string) bool {
	changed := false
	for i := 0; i+1 < len(src.Content); i += 2 {
		k, v := src.Content[i], src.Content[i+1]
		key := k.Value
		if path != "" {
			key = path + "." + k.Value
		}
		have := lookup(dst, k.Value)
		switch {
		case have == nil:
			dst.Content = append(dst.Content, k, v)
			changed = true
		case have.Kind == yaml.MappingNode && v.Kind == yaml.MappingNode:
			changed = mergeMapping(have, v, key, conflicts) || changed
		case have.Kind == yaml.SequenceNode && v.Kind == yaml.SequenceNode:
			changed = mergeSequence(have, v, key, conflicts) || changed
		case !same(have, v):
			*conflicts = append(*conflicts, fmt.Sprintf("%s: the stack file has %s, the design %s", key, text(have), text(v)))
		}
	}
	return changed
}

// mergeSequence appends src's items; a named item (a pool, a model) whose
// name is taken already is a conflict.
func mergeSequence(dst, src *yaml.Node, path string, conflicts *[]string) bool {
	names := map[string]bool{}
	for _, item := range dst.Content {
		if n := itemName(item); n != "" {
			names[n] = true
		}
	}
	var add []*yaml.Node
	for _, item := range src.Content {
		if n := itemName(item); n != "" && names[n] {
			*conflicts = append(*conflicts, fmt.Sprintf("%s: %q exists in the stack file already: rename it in the design (stackctl add-model -pool NAME renames its pool)", path, n))
			continue
		}
		add = append(add, item)
	}
	dst.Content = append(dst.Content, add...)
	return len(add) > 0
}

func itemName(item *yaml.Node) string {
	if item.Kind != yaml.MappingNode {
		return ""
	}
	if n := lookup(item, "name"); n != nil && n.Kind == yaml.ScalarNode {
		return n.Value
	}
	return ""
}

// same compares two values as data (not layout or comments).
func same(a, b *yaml.Node) bool {
	var x, y any
	return a.Decode(&x) == nil && b.Decode(&y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

func text(n *yaml.Node) string {
	var v any
	if n.Decode(&v) != nil {
		return "?"
	}
	return fmt.Sprintf("%v", v)
}

func keyComment(m *yaml.Node) string {
	if len(m.Content) == 0 {
		return ""
	}
	return m.Content[0].HeadComment
}

// firstLine is the first comment line of the first comment given.
func firstLine(comments ...string) string {
	for _, c := range comments {
		if c != "" {
			line, _, _ := strings.Cut(c, "\n")
			return line
		}
	}
	return ""
}
