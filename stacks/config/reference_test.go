package config_test

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/natron/gpu-node-pools/internal/secret"
	"github.com/natron/gpu-node-pools/internal/testkit/pulumitest"
	"github.com/natron/gpu-node-pools/stacks/config"
	"github.com/natron/gpu-node-pools/stacks/target/registry"
)

// updateDocs rewrites the generated config reference (docs/config.md) and
// the config section of Pulumi.yaml: `make docs`.
var updateDocs = flag.Bool("update-docs", false, "rewrite docs/config.md and Pulumi.yaml's config from the code")

const module = "github.com/natron/gpu-node-pools/"

// The config reference and Pulumi.yaml's declarations are generated from
// the block table (each block's Doc) and the doc comments of the types the
// blocks decode into: a description changed in the code and not
// regenerated, or a key without a doc comment, fails here.
func TestConfigReferenceIsGenerated(t *testing.T) {
	t.Parallel()
	docs := newDocIndex(t)
	ref := reference(t, docs)
	project := projectFile(t, docs)
	for file, want := range map[string]string{"docs/config.md": ref, "Pulumi.yaml": project} {
		path := filepath.Join(pulumitest.RepoRoot(), file)
		if *updateDocs {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (make docs writes it)", err)
		}
		if diff := cmp.Diff(want, string(got)); diff != "" {
			t.Errorf("%s is stale; run make docs (-generated +file):\n%s", file, diff)
		}
	}
}

// Every leaf key has a description: the generator refuses an empty one,
// and a description is the first paragraph of the field's doc comment.
func TestDocCommentParsing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ field, comment, desc, def string }{
		{"MinNodes", "MinNodes is the lower bound.\nDefault: 0.\n", "the lower bound.", "0"},
		{"Name", "The pool's name,\nat most 12 characters.\n\nA note for developers.\n", "The pool's name, at most 12 characters.", ""},
		{"Spot", "Pays less. Default: false.\n", "Pays less.", "false"},
		{"Install", "Install runs Velero.\n", "runs Velero.", ""},
		{"Registries", "Registries are image prefixes.\nDefault: nvcr.io, docker.io/vllm.\n", "image prefixes.", "nvcr.io, docker.io/vllm"},
		{"Kind", "Kind is pgvector or qdrant.\n", "pgvector or qdrant.", ""},
		{"Replicas", "Replicas are PostgreSQL instances.\nDefault: what the pool\nholds.\n", "PostgreSQL instances.", "what the pool holds"},
		{"Zones", "", "", ""},
	} {
		desc, def := describe(tc.field, tc.comment)
		if desc != tc.desc || def != tc.def {
			t.Errorf("describe(%q, %q) = %q, %q; want %q, %q", tc.field, tc.comment, desc, def, tc.desc, tc.def)
		}
	}
}

// docIndex holds the doc comments of the fields of every struct type in
// the module's packages, by package path, type and field name.
type docIndex map[string]map[string]string

func newDocIndex(t *testing.T) docIndex {
	t.Helper()
	idx := docIndex{}
	root := pulumitest.RepoRoot()
	owners := []reflect.Type{reflect.TypeFor[config.Config]()}
	for _, kp := range config.KeyPaths() {
		if kp.Owner != nil {
			owners = append(owners, kp.Owner)
		}
	}
	for _, owner := range owners {
		pkg := owner.PkgPath()
		if _, ok := idx[pkg]; ok {
			continue
		}
		idx[pkg] = map[string]string{}
		dir := filepath.Join(root, strings.TrimPrefix(pkg, module))
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range parsed.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.TYPE {
					continue
				}
				for _, spec := range gd.Specs {
					ts := spec.(*ast.TypeSpec)
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					doc := ts.Doc.Text()
					if doc == "" && len(gd.Specs) == 1 {
						doc = gd.Doc.Text()
					}
					idx[pkg][ts.Name.Name] = doc
					indexFields(idx[pkg], ts.Name.Name, st)
				}
			}
		}
	}
	return idx
}

func indexFields(idx map[string]string, typ string, st *ast.StructType) {
	for _, fl := range st.Fields.List {
		text := fl.Doc.Text()
		if text == "" {
			text = fl.Comment.Text()
		}
		for _, n := range fl.Names {
			idx[typ+"."+n.Name] = text
		}
	}
}

func (d docIndex) comment(kp config.KeyPath) string { return d.of(kp.Owner, kp.Field) }

// of is the doc comment of a struct type's field, or of the type itself
// with an empty field name.
func (d docIndex) of(owner reflect.Type, field string) string {
	if field == "" {
		return d[owner.PkgPath()][owner.Name()]
	}
	return d[owner.PkgPath()][owner.Name()+"."+field]
}

var (
	// "Default: <value>." closes a description
	defaultLine = regexp.MustCompile(`(?s)(?:^|\s)Default: (.*?)\.?\s*$`)
	// "Name is", "Name are" or "Name <verb>": the field's name leading
	// its comment, which the reference's key column already says
	fieldLead = regexp.MustCompile(`^[A-Z][A-Za-z0-9]* (?:(?:is|are) |([a-z]))`)
	required  = regexp.MustCompile(`(^|\. )Required[.:,]`)
)

// describe splits a field's doc comment into its description (the first
// paragraph, without a leading "<Field> is" or "<Field> <verb>") and its default (a closing
// "Default: <value>." sentence).
func describe(field, comment string) (desc, def string) {
	para, _, _ := strings.Cut(strings.TrimSpace(comment), "\n\n")
	if m := defaultLine.FindStringSubmatchIndex(para); m != nil {
		def = para[m[2]:m[3]]
		para = para[:m[0]]
	}
	para = strings.Join(strings.Fields(para), " ")
	def = strings.Join(strings.Fields(def), " ")
	if m := fieldLead.FindStringSubmatchIndex(para); m != nil && strings.HasPrefix(para, field+" ") {
		if m[2] >= 0 { // "<Field> <verb>": keep the verb
			para = para[m[2]:]
		} else {
			para = para[m[1]:]
		}
	}
	return para, def
}

// typeName is a value's type in the words of the reference.
func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[secret.Secret]():
		return "secret"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return "object"
	case t.Kind() == reflect.Slice:
		return "list of " + typeName(t.Elem()) + "s"
	case t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Interface:
		return "object"
	case t.Kind() == reflect.Map:
		return "map of " + typeName(t.Elem()) + "s"
	case t.Kind() == reflect.Interface:
		return "object"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	}
	return t.Kind().String()
}

// blockKey splits a full key path into its block and the key inside it.
func blockKey(path string) (block, key string) {
	_, p, _ := strings.Cut(path, ":")
	block, key, _ = strings.Cut(p, ".")
	block, list := strings.CutSuffix(block, "[*]")
	if list {
		key = strings.TrimPrefix(key, ".")
	}
	return block, strings.ReplaceAll(key, "[*]", "[]")
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// block is what the reference says of one top-level key: its description
// and default from the doc comment of its Config field (a target's block:
// of the target's Cluster type), its type, and its keys.
type block struct {
	config.Block
	desc, def string
	typ       string // string, boolean, object or list of objects
	keys      []config.KeyPath
}

func blocks(t *testing.T, docs docIndex) []block {
	t.Helper()
	byBlock := map[string][]config.KeyPath{}
	for _, kp := range config.KeyPaths() {
		name, _ := blockKey(kp.Path)
		byBlock[name] = append(byBlock[name], kp)
	}
	cfg := reflect.TypeFor[config.Config]()
	var out []block
	for _, bl := range config.Blocks() {
		b := block{Block: bl, keys: byBlock[bl.Key], typ: "object"}
		f, ok := cfg.FieldByNameFunc(func(n string) bool { return strings.EqualFold(n, bl.Key) })
		switch {
		case ok:
			b.desc, b.def = describe(f.Name, docs.of(cfg, f.Name))
			switch ft := f.Type; {
			case bl.Scalar:
				b.typ = typeName(ft)
			case ft.Kind() == reflect.Slice:
				b.typ = "list of objects"
			}
		case len(b.keys) > 0 && b.keys[0].Owner != nil:
			// a target's block: the Cluster type's own doc comment
			owner := b.keys[0].Owner
			b.desc, b.def = describe(owner.Name(), docs.of(owner, ""))
		}
		if b.desc == "" {
			t.Errorf("block %s: no doc comment to describe it", bl.Key)
		}
		if bl.Key == "target" { // the registry knows them, not a comment
			b.desc += " Allowed: " + strings.Join(registry.Names(), ", ") + "."
		}
		out = append(out, b)
	}
	return out
}

// topKeys are a block's first-level keys, in order.
func (b block) topKeys() []string {
	var out []string
	for _, kp := range b.keys {
		_, key := blockKey(kp.Path)
		top, _, _ := strings.Cut(strings.TrimSuffix(key, "[]"), ".")
		top, _, _ = strings.Cut(top, "[]")
		if top != "" && (len(out) == 0 || out[len(out)-1] != top) {
			out = append(out, top)
		}
	}
	return out
}

// sentence starts a description with a capital, as a paragraph of its own.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + cell(s) + "`"
}

// prose is a default said in words ("the target's"), not a literal value.
var prose = regexp.MustCompile(`[A-Za-z]{3,}.* |\s[A-Za-z]{3,}`)

func value(s string) string {
	if prose.MatchString(s) {
		return cell(s)
	}
	return code(s)
}

func reference(t *testing.T, docs docIndex) string {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(referenceIntro)
	bs := blocks(t, docs)
	b.WriteString("## Top-level keys\n\n| key | type | default | description |\n|---|---|---|---|\n")
	for _, bl := range bs {
		key := code(bl.Key)
		if !bl.Scalar {
			key = fmt.Sprintf("[%s](#%s)", key, strings.ToLower(bl.Key))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", key, bl.typ, value(bl.def), cell(bl.desc))
	}
	for _, bl := range bs {
		if bl.Scalar {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s\n", bl.Key, sentence(bl.desc))
		if bl.keys[0].Owner != nil {
			b.WriteString("\n| key | type | default | description |\n|---|---|---|---|\n")
		}
		for _, kp := range bl.keys {
			_, key := blockKey(kp.Path)
			if kp.Owner == nil {
				continue // the block is one value (a map): its description says it all
			}
			desc, def := describe(kp.Field, docs.comment(kp))
			if desc == "" {
				t.Errorf("%s (%s.%s): no doc comment to describe it", kp.Path, kp.Owner, kp.Field)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", code(key), typeName(kp.Type), value(def), cell(desc))
		}
	}
	return b.String()
}

const referenceIntro = `# Config reference

<!-- Generated by ` + "`make docs`" + ` from the block table (stacks/config/blocks.go)
and the doc comments of the config types; a test fails when it is stale. -->

All keys are in the ` + "`gpu-node-pools`" + ` namespace and declared in ` + "`Pulumi.yaml`" + `.
Decoding is strict: an unknown key anywhere (` + "`maxNode`" + `,
` + "`gpu-node-pools:pool`" + `) is an error that names it and suggests the closest
key. Every problem is reported at once, as
` + "`<key path>: <what is wrong>, got <value>`" + `, before any resource is
registered: an invalid config changes nothing. One
mistake gives one problem: a pool with a misspelled key, an unknown SKU or a
bad bound is reported once, and the models and batch jobs on it are not
reported again. Secrets are set with ` + "`pulumi config set --secret --path`" + `.
A key in a list is written ` + "`pools[i].name`" + ` in problems; below, the key
inside one item.

`

// projectFile is Pulumi.yaml: its fixed head, then every block declared
// with its type, default and description from the same table.
func projectFile(t *testing.T, docs docIndex) string {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(projectHead)
	b.WriteString("config:\n")
	for _, bl := range blocks(t, docs) {
		fmt.Fprintf(&b, "  %s:\n", bl.Key)
		required := required.MatchString(bl.desc)
		switch bl.typ {
		case "string":
			b.WriteString("    type: string\n")
			if bl.def != "" || !required {
				fmt.Fprintf(&b, "    default: %q\n", bl.def)
			}
		case "list of objects":
			b.WriteString("    type: array\n    items:\n      type: object\n")
			if !required {
				b.WriteString("    default: []\n")
			}
		case "object":
			b.WriteString("    type: object\n    default: {}\n")
		default: // a scalar Pulumi would type too narrowly (protect: true, false or auto)
			fmt.Fprintf(&b, "    default: %s\n", bl.def)
		}
		desc := bl.desc
		if keys := bl.topKeys(); len(keys) > 0 && !bl.Scalar {
			desc += " Keys: " + strings.Join(keys, ", ") + "."
		}
		if !bl.Scalar {
			desc += " Reference: docs/config.md#" + strings.ToLower(bl.Key) + "."
		}
		b.WriteString("    description: >-\n")
		for _, l := range wrap(desc, 72) {
			b.WriteString("      " + l + "\n")
		}
	}
	return b.String()
}

func wrap(s string, width int) []string {
	var out []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			out = append(out, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(out, line)
}

const projectHead = `# Generated by make docs from stacks/config (the block table and the
# config types' doc comments); docs/config.md is the full reference.
name: gpu-node-pools
runtime:
  name: go
  options:
    # built by go install only when a source changed, never stale (see the script)
    binary: .ci/program.sh
description: >-
  GPU node pools as an add-on to a customer's existing Kubernetes platform:
  AKS agent pools of NC/ND-series VMs, or bare-metal A100/H100 pools through
  Cluster API on Natron Cloud and Flex Stack.
`
