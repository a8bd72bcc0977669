package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Bounds of a config file: its size, how deep its values nest and how
// many values it may expand to (YAML aliases can repeat a value many
// times over).
const (
	maxFileSize  = 1 << 20
	maxDepth     = 32
	maxFileNodes = 100_000
)

// nodeKind is the kind of a value in a config file.
type nodeKind int

const (
	nodeScalar nodeKind = iota
	nodeMapping
	nodeSequence
)

// Scalar tags: what a scalar is, whichever the format.
const (
	tagString    = "string"
	tagInt       = "int"
	tagFloat     = "float"
	tagBool      = "bool"
	tagNull      = "null"
	tagTimestamp = "timestamp" // an unquoted YAML date or time
)

// node is one value of a config file, JSON or YAML, with its position.
type node struct {
	kind nodeKind
	// tag says what a scalar is: one of the tag constants, or a YAML tag
	// such as "!!binary" for anything else.
	tag string
	// value is a scalar's text: a string's contents, a number as written.
	value     string
	line, col int // 1-based
	// keys and vals are a mapping's pairs, in the file's order; keys are
	// scalars.
	keys, vals []*node
	// items are a sequence's values.
	items []*node
}

// describe names what n is, for "want X, got Y" messages. It never
// repeats a string's contents, which might be a secret.
func (n *node) describe() string {
	switch n.kind {
	case nodeMapping:
		return "a mapping"
	case nodeSequence:
		return "a list"
	}
	switch n.tag {
	case tagString:
		return "a string"
	case tagInt, tagFloat:
		return "the number " + n.value
	case tagBool:
		return n.value
	case tagNull:
		return "null"
	case tagTimestamp:
		return "a date"
	}
	return "a value tagged " + n.tag
}

// parseYAML reads a YAML document into a node tree. Aliases are expanded;
// merge keys and more than one document are errors.
func parseYAML(data []byte) (*node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errEmptyFile
		}
		return nil, yamlError(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, &posError{line: next.Line, col: next.Column, msg: "a second YAML document; a config file holds one"}
	case !errors.Is(err, io.EOF):
		return nil, yamlError(err)
	}
	b := yamlBuilder{budget: maxFileNodes}
	return b.build(&doc, 0)
}

// errEmptyFile is returned for a file with nothing but comments and
// whitespace.
var errEmptyFile = errors.New("the file is empty; write {} for a file that sets nothing")

// posError is an error at a position of the file.
type posError struct {
	line, col int // col 0: unknown
	msg       string
}

func (e *posError) Error() string {
	switch {
	case e.line == 0:
		return e.msg
	case e.col == 0:
		return fmt.Sprintf("%d: %s", e.line, e.msg)
	}
	return fmt.Sprintf("%d:%d: %s", e.line, e.col, e.msg)
}

// yamlLineRE finds the line in the YAML parser's messages
// ("yaml: line 3: mapping values are not allowed in this context").
var yamlLineRE = regexp.MustCompile(`^yaml: (?:line (\d+): )?`)

// yamlParserProblems are the problems the YAML parser (as opposed to its
// scanner) reports. For those the parser's message gives the line before
// the construct that failed (a 0-based line); the scanner's are 1-based.
var yamlParserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

func yamlError(err error) error {
	msg := err.Error()
	m := yamlLineRE.FindStringSubmatch(msg)
	if m == nil {
		return &posError{msg: msg}
	}
	msg = msg[len(m[0]):]
	line, _ := strconv.Atoi(m[1])
	if line > 0 && yamlParserProblems[msg] {
		line++
	}
	return &posError{line: line, msg: msg}
}

type yamlBuilder struct{ budget int }

func (b *yamlBuilder) build(y *yaml.Node, depth int) (*node, error) {
	b.budget--
	if b.budget < 0 {
		return nil, &posError{line: y.Line, col: y.Column, msg: fmt.Sprintf("the file expands to more than %d values", maxFileNodes)}
	}
	if depth > maxDepth {
		return nil, &posError{line: y.Line, col: y.Column, msg: fmt.Sprintf("values nest more than %d deep", maxDepth)}
	}
	n := &node{line: y.Line, col: y.Column}
	switch y.Kind {
	case yaml.DocumentNode:
		if len(y.Content) != 1 {
			return nil, errEmptyFile
		}
		return b.build(y.Content[0], depth)
	case yaml.AliasNode:
		if y.Alias == nil {
			return nil, &posError{line: y.Line, col: y.Column, msg: "an alias to nothing"}
		}
		target, err := b.build(y.Alias, depth+1)
		if err != nil {
			return nil, err
		}
		c := *target
		c.line, c.col = y.Line, y.Column
		return &c, nil
	case yaml.ScalarNode:
		n.kind, n.value = nodeScalar, y.Value
		switch t := y.ShortTag(); t {
		case "!!str":
			n.tag = tagString
		case "!!int":
			n.tag = tagInt
		case "!!float":
			n.tag = tagFloat
		case "!!bool":
			n.tag = tagBool
		case "!!null":
			n.tag = tagNull
		case "!!timestamp":
			n.tag = tagTimestamp
		case "!!merge":
			return nil, &posError{line: y.Line, col: y.Column, msg: "merge keys (<<) are not supported"}
		default:
			n.tag = t
		}
	case yaml.MappingNode:
		n.kind = nodeMapping
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			if k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				return nil, &posError{line: k.Line, col: k.Column, msg: "a key must be a plain name"}
			}
			key, err := b.build(k, depth+1)
			if err != nil {
				return nil, err
			}
			val, err := b.build(v, depth+1)
			if err != nil {
				return nil, err
			}
			n.keys, n.vals = append(n.keys, key), append(n.vals, val)
		}
	case yaml.SequenceNode:
		n.kind = nodeSequence
		for _, c := range y.Content {
			item, err := b.build(c, depth+1)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, item)
		}
	default:
		return nil, &posError{line: y.Line, col: y.Column, msg: "an unknown kind of YAML value"}
	}
	return n, nil
}

// parseJSON reads a JSON document into a node tree. encoding/json gives
// offsets; they are turned into lines and columns.
func parseJSON(data []byte) (*node, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errEmptyFile
	}
	p := &jsonParser{data: data, dec: json.NewDecoder(bytes.NewReader(data)), budget: maxFileNodes}
	p.dec.UseNumber()
	for i, c := range data {
		if c == '\n' {
			p.lines = append(p.lines, i+1)
		}
	}
	n, err := p.value(0)
	if err != nil {
		return nil, p.posError(err)
	}
	if off := p.skip(p.dec.InputOffset()); off < int64(len(data)) {
		line, col := p.position(off)
		return nil, &posError{line: line, col: col, msg: "data after the top-level value"}
	}
	return n, nil
}

type jsonParser struct {
	data   []byte
	dec    *json.Decoder
	lines  []int // offsets at which lines 2, 3, … start
	budget int
}

// skip returns the offset of the next token at or after off: past
// whitespace and the ',' and ':' between tokens.
func (p *jsonParser) skip(off int64) int64 {
	for off < int64(len(p.data)) {
		switch p.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

// position turns a byte offset into a line and a column (in characters),
// both 1-based.
func (p *jsonParser) position(off int64) (line, col int) {
	off = min(max(off, 0), int64(len(p.data)))
	i := sort.SearchInts(p.lines, int(off)+1) // lines starting at or before off
	start := 0
	if i > 0 {
		start = p.lines[i-1]
	}
	return i + 1, utf8.RuneCount(p.data[start:off]) + 1
}

// posError gives err the position where the parser stopped.
func (p *jsonParser) posError(err error) error {
	var pe *posError
	if errors.As(err, &pe) {
		return pe
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := p.position(se.Offset)
		return &posError{line: line, col: col, msg: se.Error()}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		line, col := p.position(int64(len(p.data)))
		return &posError{line: line, col: col, msg: "unexpected end of file"}
	}
	line, col := p.position(p.dec.InputOffset())
	return &posError{line: line, col: col, msg: err.Error()}
}

func (p *jsonParser) value(depth int) (*node, error) {
	line, col := p.position(p.skip(p.dec.InputOffset()))
	p.budget--
	if p.budget < 0 {
		return nil, &posError{line: line, col: col, msg: fmt.Sprintf("the file holds more than %d values", maxFileNodes)}
	}
	if depth > maxDepth {
		return nil, &posError{line: line, col: col, msg: fmt.Sprintf("values nest more than %d deep", maxDepth)}
	}
	tok, err := p.dec.Token()
	if err != nil {
		return nil, err
	}
	n := &node{line: line, col: col}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.kind = nodeMapping
			for p.dec.More() {
				kl, kc := p.position(p.skip(p.dec.InputOffset()))
				kt, err := p.dec.Token()
				if err != nil {
					return nil, err
				}
				name, ok := kt.(string)
				if !ok {
					return nil, &posError{line: kl, col: kc, msg: "a key must be a string"}
				}
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, &node{kind: nodeScalar, tag: tagString, value: name, line: kl, col: kc})
				n.vals = append(n.vals, v)
			}
		case '[':
			n.kind = nodeSequence
			for p.dec.More() {
				v, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, v)
			}
		default:
			return nil, &posError{line: line, col: col, msg: fmt.Sprintf("unexpected %q", rune(t))}
		}
		if _, err := p.dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.tag, n.value = tagString, t
	case json.Number:
		n.tag, n.value = tagFloat, t.String()
		if _, err := strconv.ParseInt(n.value, 10, 64); err == nil {
			n.tag = tagInt
		}
	case bool:
		n.tag, n.value = tagBool, strconv.FormatBool(t)
	case nil:
		n.tag, n.value = tagNull, "null"
	default:
		return nil, &posError{line: line, col: col, msg: fmt.Sprintf("unexpected %v", t)}
	}
	return n, nil
}
