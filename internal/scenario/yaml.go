package scenario

import (
	"fmt"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// UnmarshalYAML reads a Go duration string such as "90s" or "1m30s".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &fieldError{line: n.Line, msg: "want a duration like 90s"}
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		if _, nerr := strconv.ParseFloat(n.Value, 64); nerr == nil && n.Value != "0" {
			return &fieldError{line: n.Line, msg: fmt.Sprintf("%q has no unit: write it as a duration like %ss", n.Value, n.Value)}
		}
		return &fieldError{line: n.Line, msg: fmt.Sprintf("%q is not a duration like 90s", n.Value)}
	}
	if v < 0 {
		return &fieldError{line: n.Line, msg: fmt.Sprintf("%s is negative", v)}
	}
	d.Duration = v
	return nil
}

// MarshalYAML writes the duration as a Go duration string.
func (d Duration) MarshalYAML() (any, error) { return d.Duration.String(), nil }

// UnmarshalYAML reads a node number or "any".
func (r *NodeRef) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if n.Value == "any" {
			*r = NodeRef{Any: true}
			return nil
		}
		if v, err := strconv.Atoi(n.Value); err == nil && v > 0 {
			*r = NodeRef{N: v}
			return nil
		}
	}
	return &fieldError{line: n.Line, msg: fmt.Sprintf("%q is not a node number (1, 2, ...) or \"any\"", n.Value)}
}

// MarshalYAML writes the node number or "any".
func (r NodeRef) MarshalYAML() (any, error) {
	if r.Any {
		return "any", nil
	}
	return r.N, nil
}

// IsZero lets omitempty drop an unset node.
func (r NodeRef) IsZero() bool { return !r.IsSet() }

// IsZero lets omitempty drop a zero duration.
func (d Duration) IsZero() bool { return d.Duration == 0 }

// fieldError is a decode error that knows its line.
type fieldError struct {
	line int
	msg  string
}

func (e *fieldError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

// keyLine finds the line of the value at path (keys and sequence indexes)
// below root, falling back to the deepest node found.
func keyLine(root *yaml.Node, path ...any) int {
	n := root
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 1
	if n != nil {
		line = n.Line
	}
	for _, p := range path {
		if n == nil {
			break
		}
		var next *yaml.Node
		switch key := p.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == key {
						line = n.Content[i].Line
						next = n.Content[i+1]
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && key < len(n.Content) {
				next = n.Content[key]
				line = next.Line
			}
		}
		n = next
	}
	return line
}

// hasKey reports whether the mapping at path holds key.
func hasKey(root *yaml.Node, key string) bool {
	n := root
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}
