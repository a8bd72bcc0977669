package main

import (
	"crypto/subtle"
	"regexp"
	"slices"
	"strings"

	"github.com/go-waitingroom/waitingroom"
)

// ruleKinds are the keys of a bypass rule, one per rule.
var ruleKinds = []string{"pathPrefix", "pathPrefixCaseSensitive", "methods", "networks", "header", "cookie"}

// tokenRE is an HTTP token (RFC 9110): what header names and methods are
// made of.
var tokenRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

func (d *fileDecoder) rules(n *node, path string) ([]waitingroom.Rule, error) {
	var rules []waitingroom.Rule
	err := d.list(n, path, func(it *node, p string) error {
		r, err := d.rule(it, p)
		rules = append(rules, r)
		return err
	})
	return rules, err
}

// rule decodes one bypass rule: a mapping with exactly one of ruleKinds.
func (d *fileDecoder) rule(n *node, path string) (waitingroom.Rule, error) {
	kinds := strings.Join(ruleKinds, ", ")
	if n.kind != nodeMapping {
		return waitingroom.Rule{}, d.errorf(n, path, "want a rule: a mapping with one of %s; got %s", kinds, n.describe())
	}
	if len(n.keys) != 1 {
		return waitingroom.Rule{}, d.errorf(n, path, "a rule has exactly one of %s; this one has %d", kinds, len(n.keys))
	}
	k, v := n.keys[0], n.vals[0]
	p := joinPath(path, k.value)
	switch k.value {
	case "pathPrefix", "pathPrefixCaseSensitive":
		return d.pathPrefixRule(k.value, v, p)
	case "methods":
		return d.methodsRule(v, p)
	case "networks":
		return d.networksRule(v, p)
	case "header", "cookie":
		return d.nameRule(k.value, v, p)
	}
	if kind := suggest(k.value, ruleKinds); kind != "" {
		return waitingroom.Rule{}, d.errorf(k, p, "unknown kind of rule; did you mean %s?", kind)
	}
	return waitingroom.Rule{}, d.errorf(k, p, "unknown kind of rule; want one of %s", kinds)
}

// pathPrefixRule decodes the prefixes of a rule of kind pathPrefix or
// pathPrefixCaseSensitive, each starting with /.
func (d *fileDecoder) pathPrefixRule(kind string, v *node, p string) (waitingroom.Rule, error) {
	prefixes, err := d.strs(v, p)
	if err != nil {
		return waitingroom.Rule{}, err
	}
	for i, pre := range prefixes {
		if !strings.HasPrefix(pre, "/") {
			it, ip := d.item(v, p, i)
			return waitingroom.Rule{}, d.errorf(it, ip, "%q must start with /", pre)
		}
	}
	if kind == "pathPrefix" {
		return waitingroom.PathPrefix(prefixes...), nil
	}
	return waitingroom.PathPrefixCaseSensitive(prefixes...), nil
}

// methodsRule decodes the methods of a rule of kind methods: each a
// token, and a standard method only in capitals.
func (d *fileDecoder) methodsRule(v *node, p string) (waitingroom.Rule, error) {
	methods, err := d.strs(v, p)
	if err != nil {
		return waitingroom.Rule{}, err
	}
	for i, m := range methods {
		it, ip := d.item(v, p, i)
		switch {
		case !tokenRE.MatchString(m):
			return waitingroom.Rule{}, d.errorf(it, ip, "%q is not a method", m)
		case m != strings.ToUpper(m) && slices.Contains(standardMethods, strings.ToUpper(m)):
			return waitingroom.Rule{}, d.errorf(it, ip, "methods are case-sensitive: write %s, not %s", strings.ToUpper(m), m)
		}
	}
	return waitingroom.Methods(methods...), nil
}

// networksRule decodes the CIDRs of a rule of kind networks.
func (d *fileDecoder) networksRule(v *node, p string) (waitingroom.Rule, error) {
	nets, err := d.networks(v, p)
	if err != nil {
		return waitingroom.Rule{}, err
	}
	cidrs := make([]string, len(nets))
	for i, n := range nets {
		cidrs[i] = n.String()
	}
	return waitingroom.ClientNetworks(cidrs...)
}

// nameRule decodes a rule of kind header or cookie: a mapping of the
// header's or cookie's name and, if the rule asks for one, its value.
func (d *fileDecoder) nameRule(kind string, v *node, p string) (waitingroom.Rule, error) {
	var name, value string
	var hasValue bool
	err := d.fields(v, p, map[string]decodeFunc{
		"name": into(&name, d.str),
		"value": func(n *node, path string) (err error) {
			value, err = d.str(n, path)
			hasValue = true
			return err
		},
	})
	if err != nil {
		return waitingroom.Rule{}, err
	}
	if name == "" {
		return waitingroom.Rule{}, d.errorf(v, p, "name is required")
	}
	if kind == "header" && !tokenRE.MatchString(name) {
		return waitingroom.Rule{}, d.errorf(v, p+".name", "%q is not a header name", name)
	}
	var match func(string) bool
	if hasValue {
		match = func(got string) bool { return subtle.ConstantTimeCompare([]byte(got), []byte(value)) == 1 }
	}
	if kind == "header" {
		return waitingroom.Header(name, match), nil
	}
	return waitingroom.Cookie(name, match), nil
}

var standardMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "CONNECT", "OPTIONS", "TRACE"}
