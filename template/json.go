package template

import (
	"encoding/json"
	"io"
	"strings"
)

// WriteJSON writes d as a JSON object holding one member named key, whose
// value holds every field of d under its JSON name, followed by a newline:
//
//	{"waitingRoom":{"inWaitingRoom":true,"waitTimeKnown":true,"waitTime":10,...}}
//
// The key is the caller's choice ("cfWaitingRoom" matches the commercial
// product). A nil d is written as the zero Data. The object is written in a
// single Write.
func WriteJSON(w io.Writer, key string, d *Data) error {
	if d == nil {
		d = &Data{}
	}
	body, err := json.Marshal(d)
	if err != nil {
		return err // cannot happen: Data holds only bools, ints and strings
	}
	k, err := json.Marshal(key)
	if err != nil {
		return err // cannot happen for a string
	}
	out := make([]byte, 0, len(k)+len(body)+4)
	out = append(out, '{')
	out = append(out, k...)
	out = append(out, ':')
	out = append(out, body...)
	out = append(out, '}', '\n')
	_, err = w.Write(out)
	return err
}

// Limits on the Accept header WantsJSON looks at. Anything past them is
// ignored, so the work is bounded whatever a client sends.
const (
	maxAcceptBytes   = 4096
	maxAcceptEntries = 64
)

// WantsJSON reports whether an Accept header value asks for JSON rather than
// a page: it lists application/json and does not list text/html. A media
// range with q=0 counts as not listed. Wildcards (*/*, application/*) do not
// count as JSON, so browsers and clients that accept anything get the page.
//
// Matching ignores case, spaces and parameters. Only the first 4 KiB and the
// first 64 entries of the value are looked at.
func WantsJSON(accept string) bool {
	truncated := false
	if len(accept) > maxAcceptBytes {
		accept = accept[:maxAcceptBytes]
		truncated = true
	}
	var wantJSON, wantHTML bool
	for n := 0; n < maxAcceptEntries && accept != ""; n++ {
		entry, rest, more := strings.Cut(accept, ",")
		accept = rest
		if !more && truncated {
			break // the entry was cut off at the limit: don't guess
		}
		mediaType, params, _ := strings.Cut(entry, ";")
		mediaType = trimOWS(mediaType)
		isJSON := asciiEqualFold(mediaType, "application/json")
		isHTML := asciiEqualFold(mediaType, "text/html")
		if !isJSON && !isHTML {
			continue
		}
		if qIsZero(params) {
			continue
		}
		wantJSON = wantJSON || isJSON
		wantHTML = wantHTML || isHTML
	}
	return wantJSON && !wantHTML
}

// IsExactJSON reports whether an Accept header value is exactly
// "application/json", ignoring ASCII case and the spaces and tabs around
// it: the only value for which the commercial product answers JSON. A
// value with parameters or other media ranges is not.
func IsExactJSON(accept string) bool {
	return asciiEqualFold(trimOWS(accept), "application/json")
}

// qIsZero reports whether the parameters of a media range hold a q
// parameter of zero ("q=0", "q=0.", "q=0.000"). A malformed q counts as
// non-zero: the client listed the type.
func qIsZero(params string) bool {
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		name, value, ok := strings.Cut(p, "=")
		if !ok || !asciiEqualFold(trimOWS(name), "q") {
			continue
		}
		value = trimOWS(value)
		if value == "" || value[0] != '0' {
			return false
		}
		value = value[1:]
		if value == "" {
			return true
		}
		if value[0] != '.' {
			return false
		}
		for i := 1; i < len(value); i++ {
			if value[i] != '0' {
				return false
			}
		}
		return true // the first q parameter decides
	}
	return false
}

// trimOWS trims spaces and tabs.
func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// asciiEqualFold compares s with lower, which must be lower-case ASCII,
// ignoring ASCII case only (strings.EqualFold would also fold, e.g., the
// Kelvin sign to k).
func asciiEqualFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
