package model

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// ErrBadInput matches (with errors.Is) every error caused by the user's
// input rather than by the computation: the CLI exits 2 on it.
var ErrBadInput = errors.New("bad input")

// InputError says what was wrong with an input file, and where.
type InputError struct {
	File string
	Line int    // 0 when the whole file is at fault
	Key  string // dotted path of the offending key, e.g. faults[1].mttf
	Msg  string
}

func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		b.WriteString(": " + e.Key)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// Is makes every InputError match ErrBadInput.
func (e *InputError) Is(target error) bool { return target == ErrBadInput }

// badInput builds an InputError that is not tied to a file (flags).
func badInput(format string, args ...any) error {
	return &InputError{File: "flags", Msg: fmt.Sprintf(format, args...)}
}

// doc walks a parsed YAML document, keeping the file name for errors.
// The decoders below are hand-written over yaml.Node rather than struct tags
// so that every error can name the line and the key, and unknown keys are
// caught with their own line.
type doc struct{ file string }

func (d doc) errf(n *yaml.Node, key, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &InputError{File: d.file, Line: line, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// parse decodes data into its root node, which must be a mapping.
func (d doc) parse(data []byte) (*yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		line := 0
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			// yaml.v3 puts "line N:" into its syntax errors; keep its text.
			msg := strings.TrimPrefix(err.Error(), "yaml: ")
			if rest, ok := strings.CutPrefix(msg, "line "); ok {
				if n, text, ok := strings.Cut(rest, ": "); ok {
					if l, err := strconv.Atoi(n); err == nil {
						line, msg = l, text
					}
				}
			}
			return nil, &InputError{File: d.file, Line: line, Msg: "not valid YAML: " + msg}
		}
		return nil, &InputError{File: d.file, Msg: err.Error()}
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, &InputError{File: d.file, Msg: "empty file"}
	}
	n := root.Content[0]
	if n.Kind != yaml.MappingNode {
		return nil, d.errf(n, "", "the top level must be a mapping of keys")
	}
	return n, nil
}

// fields returns a mapping's values by key, rejecting unknown and repeated
// keys. path prefixes keys in messages.
func (d doc) fields(n *yaml.Node, path string, allowed ...string) (map[string]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, d.errf(n, path, "must be a mapping")
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		known := false
		for _, a := range allowed {
			if k.Value == a {
				known = true
				break
			}
		}
		if !known {
			return nil, d.errf(k, join(path, k.Value), "unknown key (known: %s)", strings.Join(allowed, ", "))
		}
		if _, dup := out[k.Value]; dup {
			return nil, d.errf(k, join(path, k.Value), "key given twice")
		}
		out[k.Value] = v
	}
	return out, nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (d doc) str(n *yaml.Node, key string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", d.errf(n, key, "must be a string")
	}
	return n.Value, nil
}

// float reads a finite number.
func (d doc) float(n *yaml.Node, key string) (float64, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, d.errf(n, key, "must be a number")
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(n.Value), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, d.errf(n, key, "%q is not a finite number", n.Value)
	}
	return v, nil
}

// positive reads a number > 0.
func (d doc) positive(n *yaml.Node, key string) (float64, error) {
	v, err := d.float(n, key)
	if err == nil && v <= 0 {
		err = d.errf(n, key, "must be > 0, got %v", v)
	}
	return v, err
}

// duration reads a Go duration string such as 4380h or 3m; it must be > 0
// unless zeroOK.
func (d doc) duration(n *yaml.Node, key string, zeroOK bool) (time.Duration, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, d.errf(n, key, "must be a Go duration such as 90s or 4380h")
	}
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if err != nil {
		return 0, d.errf(n, key, "%q is not a Go duration (e.g. 90s, 3m, 4380h)", n.Value)
	}
	if v < 0 || (v == 0 && !zeroOK) {
		return 0, d.errf(n, key, "must be > 0, got %s", n.Value)
	}
	return v, nil
}

func (d doc) seq(n *yaml.Node, key string) ([]*yaml.Node, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, d.errf(n, key, "must be a list")
	}
	return n.Content, nil
}
