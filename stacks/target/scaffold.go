package target

import "encoding/json"

// Scaffold is a target's part of `make stack`: the questions beyond the
// stack's name, cluster and render directory, and its lines of the new
// stack file.
type Scaffold struct {
	// Questions are asked as stackctl new flags and make variables.
	Questions []Question
	// Block is a text/template over Answers of the target's lines of the
	// stack file (two-space indented, under config:): the target key, its
	// block and a first pool.
	Block string
	// Secrets are the secret keys a stack with these answers needs before
	// it previews, and what each is set from.
	Secrets func(a Answers) []SecretPrompt
}

// Question is one answer a new stack on the target needs.
type Question struct {
	// Flag is the stackctl new flag, Var the make stack variable.
	Flag, Var string
	// Key is the config key the answer becomes (natron.kubernetesVersion),
	// so that a wrong answer is reported against the variable typed.
	Key      string
	Help     string
	Required bool
	// Default is the answer when none is given (nil: none); it may
	// derive from the other answers.
	Default func(a Answers) string
}

// Answers are a new stack's answers: the common ones, and the target's
// questions' by flag.
type Answers struct {
	Name, Cluster, RenderDir string
	Values                   map[string]string
}

// Get is the answer to the question with this flag.
func (a Answers) Get(flag string) string { return a.Values[flag] }

// Quoted is Get as a YAML string: an answer such as 1.33 or yes stays
// the string typed, not a number or a boolean.
func (a Answers) Quoted(flag string) string {
	b, _ := json.Marshal(a.Values[flag])
	return string(b)
}

// SecretPrompt is a secret key to set, and where its value comes from.
type SecretPrompt struct {
	// Key is the full key path, gpu-node-pools:<block>.<key>.
	Key string
	// From is what to read it from, e.g. <workload cluster kubeconfig file>.
	From string
}
