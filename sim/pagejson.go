package sim

import (
	"bytes"
	"strconv"

	"github.com/go-waitingroom/waitingroom/template"
)

// decodePage decodes a JSON waiting response, {"<key>":{<variables>}},
// into d: the variables a client acts on (the refresh interval and the
// estimate); the others are checked and skipped. It reports false for
// anything else. It reads what encoding/json would, at a small fraction of
// the cost, which matters when a run reads millions of pages.
func decodePage(b []byte, d *template.Data) bool {
	p := pageParser{b: b}
	if !p.byte('{') || !p.skipString() || !p.byte(':') || !p.byte('{') {
		return false
	}
	if p.peek() == '}' {
		p.i++
	} else {
		for {
			name, ok := p.name()
			if !ok || !p.byte(':') || !p.member(name, d) {
				return false
			}
			if p.byte(',') {
				continue
			}
			if !p.byte('}') {
				return false
			}
			break
		}
	}
	if !p.byte('}') {
		return false
	}
	p.space()
	return p.i == len(p.b)
}

type pageParser struct {
	b []byte
	i int
}

func (p *pageParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *pageParser) peek() byte {
	p.space()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// byte consumes c, after white space, if it is next.
func (p *pageParser) byte(c byte) bool {
	if p.peek() != c {
		return false
	}
	p.i++
	return true
}

// name reads a string without escapes (the names of the variables have
// none); ok is false for anything else.
func (p *pageParser) name() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	n := bytes.IndexByte(p.b[p.i:], '"')
	if n < 0 {
		return nil, false
	}
	s := p.b[p.i : p.i+n]
	for _, c := range s {
		if c == '\\' || c < 0x20 {
			return nil, false
		}
	}
	p.i += n + 1
	return s, true
}

// skipString skips a string, escapes included.
func (p *pageParser) skipString() bool {
	if !p.byte('"') {
		return false
	}
	for p.i < len(p.b) {
		c := p.b[p.i]
		p.i++
		switch {
		case c == '"':
			return true
		case c == '\\':
			if p.i >= len(p.b) {
				return false
			}
			e := p.b[p.i]
			p.i++
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if p.i+4 > len(p.b) {
					return false
				}
				for _, h := range p.b[p.i : p.i+4] {
					if !isHex(h) {
						return false
					}
				}
				p.i += 4
			default:
				return false
			}
		case c < 0x20:
			return false
		}
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// number reads a JSON number and returns its text.
func (p *pageParser) number() ([]byte, bool) {
	p.space()
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	intStart := p.i
	if n := digits(); n == 0 || (n > 1 && p.b[intStart] == '0') {
		return nil, false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return p.b[start:p.i], true
}

func (p *pageParser) literal(s string) bool {
	p.space()
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	return true
}

// boolean reads true or false.
func (p *pageParser) boolean() (v, ok bool) {
	switch p.peek() {
	case 't':
		return true, p.literal("true")
	case 'f':
		return false, p.literal("false")
	}
	return false, false
}

// integer reads a number that fits an int, as encoding/json would into an
// int field.
func (p *pageParser) integer() (int, bool) {
	s, ok := p.number()
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(string(s))
	return n, err == nil
}

// member reads the value of the variable name into d, or skips it.
func (p *pageParser) member(name []byte, d *template.Data) bool {
	var ok bool
	switch string(name) {
	case "waitTimeKnown":
		d.WaitTimeKnown, ok = p.boolean()
	case "queueIsFull":
		d.QueueIsFull, ok = p.boolean()
	case "waitTime":
		d.WaitTime, ok = p.integer()
	case "waitTime25Percentile":
		d.WaitTime25Percentile, ok = p.integer()
	case "waitTime50Percentile":
		d.WaitTime50Percentile, ok = p.integer()
	case "waitTime75Percentile":
		d.WaitTime75Percentile, ok = p.integer()
	case "refreshIntervalSeconds":
		d.RefreshIntervalSeconds, ok = p.integer()
	case "positionInLine":
		d.PositionInLine, ok = p.integer()
	case "challengePuzzle":
		d.ChallengePuzzle, ok = p.plainString()
	default:
		ok = p.skipValue()
	}
	return ok
}

// skipValue skips a scalar: the page's variables are never arrays or
// objects.
func (p *pageParser) skipValue() bool {
	switch c := p.peek(); {
	case c == '"':
		return p.skipString()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	default:
		_, ok := p.number()
		return ok
	}
}

// plainString reads a string without escapes (a puzzle: base64url, digits
// and dots).
func (p *pageParser) plainString() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.b) && p.b[p.i] != '"' {
		if p.b[p.i] == '\\' {
			return "", false
		}
		p.i++
	}
	if p.i == len(p.b) {
		return "", false
	}
	s := string(p.b[start:p.i])
	p.i++
	return s, true
}
