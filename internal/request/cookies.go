package request

import (
	"iter"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Cookie returns the value of the first cookie named name in r's
// Cookie headers without allocating. ok is false when there is none.
func Cookie(r *http.Request, name string) (v string, ok bool) {
	for v := range Cookies(r, name, 1) {
		return v, true
	}
	return "", false
}

// Cookies yields the values of the cookies named name in r's Cookie
// headers, in order, at most limit of them, without allocating. A browser
// sends several under one name when they were set for different domains
// or paths (a sibling subdomain can set one for the parent domain), so
// reading only the first would let any of them hide the others.
func Cookies(r *http.Request, name string, limit int) iter.Seq[string] {
	return func(yield func(string) bool) {
		if strings.IndexByte(name, '=') >= 0 {
			return // no cookie has such a name
		}
		n := 0
		for _, line := range r.Header["Cookie"] {
			for len(line) > 0 {
				var part string
				if i := strings.IndexByte(line, ';'); i >= 0 {
					part, line = line[:i], line[i+1:]
				} else {
					part, line = line, ""
				}
				part = trimSpace(part)
				// The part's name (up to its first '=') is name.
				if len(part) <= len(name) || part[len(name)] != '=' || part[:len(name)] != name {
					continue
				}
				val := part[len(name)+1:]
				if len(val) > 1 && val[0] == '"' && val[len(val)-1] == '"' {
					val = val[1 : len(val)-1]
				}
				if !yield(val) {
					return
				}
				if n++; n >= limit {
					return
				}
			}
		}
	}
}

// trimSpace is strings.TrimSpace, with a shortcut for the parts of a
// Cookie header that need no trimming: those that begin and end with an
// ASCII character that is not a space.
func trimSpace(s string) string {
	if len(s) > 0 && s[0] > ' ' && s[0] < utf8.RuneSelf && s[len(s)-1] > ' ' && s[len(s)-1] < utf8.RuneSelf {
		return s
	}
	return strings.TrimSpace(s)
}
