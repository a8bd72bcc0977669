// Package request reads what a request says of itself that the room's
// rules and front doors go by: its cookies of a name, its client's
// address behind trusted proxies, and whether its path is canonical.
package request

import (
	"net"
	"net/http"
	"net/netip"
	"path"
	"slices"
	"strings"
)

// ClientAddr is r's client address: the remote address, unless that is a
// trusted proxy, in which case X-Forwarded-For is read from the right,
// skipping trusted proxies, to the first address that is not one.
// Garbage in X-Forwarded-For stops the reading there: the zero Addr.
func ClientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	addr := ParseAddr(r.RemoteAddr)
	if len(trusted) == 0 || !Trusted(addr, trusted) {
		return addr
	}
	xff := r.Header.Values("X-Forwarded-For")
	for i := len(xff) - 1; i >= 0; i-- {
		parts := strings.Split(xff[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			a := ParseAddr(strings.TrimSpace(parts[j]))
			if !a.IsValid() {
				return netip.Addr{} // garbage: trust nothing further
			}
			if !Trusted(a, trusted) {
				return a
			}
			addr = a
		}
	}
	return addr
}

// ParseAddr returns the address of s, "host:port" or a bare host (IPv4
// in IPv6 unmapped); the zero Addr for anything else.
func ParseAddr(s string) netip.Addr {
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

// Trusted reports whether a is in one of the networks.
func Trusted(a netip.Addr, networks []netip.Prefix) bool {
	return a.IsValid() && slices.ContainsFunc(networks, func(p netip.Prefix) bool { return p.Contains(a) })
}

// CanonicalPath returns r's path and whether it is canonical: no dot
// segments, no empty segments, no escaped slashes, no percent-encoding
// beyond what the path needs (RawPath is set for any other), no path
// parameters (';'), no backslashes, and no segment made only of dots and
// spaces. A rule that matches canonical paths only cannot be matched by a
// path that the application, or a server in front of it, resolves
// elsewhere.
func CanonicalPath(r *http.Request) (string, bool) {
	p := r.URL.Path
	if p == "" || p[0] != '/' || r.URL.RawPath != "" || strings.ContainsAny(p, `;\`) {
		return p, false
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		if seg != "" && strings.Trim(seg, ". ") == "" {
			return p, false // ".", "..", "...", ".. " and the like
		}
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return p, c == p
}

// HasPathPrefix reports whether path starts with prefix (with fold, ASCII
// letters of path compared in lower case, as prefix is given) and what
// follows it is printable ASCII.
func HasPathPrefix(path, prefix string, fold bool) bool {
	if len(path) < len(prefix) {
		return false
	}
	head := path[:len(prefix)]
	if fold {
		head = ASCIILower(head)
	}
	if head != prefix {
		return false
	}
	for i := len(prefix); i < len(path); i++ {
		if c := path[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// ASCIILower is s with its ASCII letters in lower case and every other
// byte as it is (strings.ToLower also folds letters such as the Kelvin
// sign into ASCII ones, and rewrites invalid UTF-8).
func ASCIILower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
