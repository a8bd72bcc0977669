package template

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/cbroglie/mustache"
)

// ErrUnknownVariable is wrapped by the error Parse returns for a template
// that uses a name no page fills: a mistyped variable that would render
// empty without a word.
var ErrUnknownVariable = errors.New("unknown variable")

// UnknownVariable is a name a template uses that no page fills, where the
// template uses it first.
type UnknownVariable struct {
	// Name is the name as written, e.g. "waitTimeMinutes".
	Name string
	// Tag is the tag as written, e.g. "{{#isFifoQueue}}" or
	// "{{{turnstyle}}}".
	Tag string
	// Line is the line of the template the tag is on, 1 being the first;
	// 0 when it was not found (a template that changes its delimiters).
	Line int
	// Suggestion is the known variable closest to Name ("waitTime" for
	// "waitTimeMinutes", "isFIFOQueue" for "isFifoQueue"); "" when none is
	// close.
	Suggestion string
}

// String describes u, e.g. "{{#isFifoQueue}} on line 5 (did you mean
// isFIFOQueue?)".
func (u UnknownVariable) String() string {
	var b strings.Builder
	b.WriteString(u.Tag)
	if u.Line > 0 {
		fmt.Fprintf(&b, " on line %d", u.Line)
	}
	if u.Suggestion != "" {
		fmt.Fprintf(&b, " (did you mean %s?)", u.Suggestion)
	}
	return b.String()
}

// Variables returns the names of the variables a page is given, sorted:
// those the package documentation lists, the markup slots turnstile and
// liveScript included. Parse accepts these, "." (the current value inside
// a section) and the default page's own texts (names starting "wr_"),
// which a page copied from the default page keeps.
func Variables() []string {
	return slices.Clone(documented())
}

var documented = sync.OnceValue(func() []string {
	return slices.Sorted(maps.Keys((&Data{}).vars()))
})

// known is every name a page is given: the documented variables and the
// default page's texts in every language.
var known = sync.OnceValue(func() map[string]bool {
	k := map[string]bool{".": true, lastUpdatedTime: true}
	for _, n := range documented() {
		k[n] = true
	}
	for _, lang := range Languages() {
		for _, f := range lookupLang(lang).forms {
			for n := range f {
				k[n] = true
			}
		}
	}
	return k
})

// unknownNames returns the names of tags that no page fills, the first use
// of each, in the order of the template.
func unknownNames(src string, tags []mustache.Tag) []UnknownVariable {
	var out []UnknownVariable
	seen := map[string]bool{}
	var walk func([]mustache.Tag)
	walk = func(tags []mustache.Tag) {
		for _, t := range tags {
			name := t.Name()
			if t.Type() != mustache.Partial && !known()[name] && !seen[name] {
				seen[name] = true
				out = append(out, describe(src, t.Type(), name))
			}
			if t.Type() == mustache.Section || t.Type() == mustache.InvertedSection {
				walk(t.Tags())
			}
		}
	}
	walk(tags)
	return out
}

// describe finds the first tag of type ty naming name in src.
func describe(src string, ty mustache.TagType, name string) UnknownVariable {
	u := UnknownVariable{Name: name, Suggestion: suggest(name)}
	q := regexp.QuoteMeta(name)
	var pattern string
	switch ty {
	case mustache.Section:
		u.Tag, pattern = "{{#"+name+"}}", `\{\{#\s*`+q+`\s*\}\}`
	case mustache.InvertedSection:
		u.Tag, pattern = "{{^"+name+"}}", `\{\{\^\s*`+q+`\s*\}\}`
	default:
		u.Tag, pattern = "{{"+name+"}}", `\{\{(?:\{\s*`+q+`\s*\}|&\s*`+q+`|\s*`+q+`)\s*\}\}`
	}
	// A name that is not UTF-8 makes no pattern: its line stays unknown.
	re, err := regexp.Compile(pattern)
	if err != nil {
		return u
	}
	if loc := re.FindStringIndex(src); loc != nil {
		u.Tag = src[loc[0]:loc[1]]
		u.Line = strings.Count(src[:loc[0]], "\n") + 1
	}
	return u
}

// suggest returns the known variable closest to name, or "": one that
// differs only in case; else one within two edits (a typo); else one that
// name starts or ends with, or that starts with name (waitTimeMinutes:
// waitTime); else one within a third of the name's length in edits. Among
// several equally close, the first in order. The default page's texts are
// offered only for names starting "wr_".
func suggest(name string) string {
	lower := strings.ToLower(name)
	candidates := documented()
	if strings.HasPrefix(lower, internalPrefix) {
		candidates = slices.Sorted(maps.Keys(known()))
	}
	best, bestRank, bestDist := "", 4, 0
	for _, c := range candidates {
		if c == "." {
			continue
		}
		lc := strings.ToLower(c)
		d := editDistance(lower, lc)
		rank := 4
		switch {
		case d == 0:
			rank = 0
		case d <= 2:
			rank = 1
		case len(lc) >= 4 && (strings.HasPrefix(lower, lc) || strings.HasSuffix(lower, lc)) || startsLike(lc, lower):
			rank = 2
		case d <= max(2, len(lower)/3):
			rank = 3
		}
		if rank < bestRank || rank == bestRank && rank < 4 && d < bestDist {
			best, bestRank, bestDist = c, rank, d
		}
	}
	return best
}

// startsLike reports whether known starts with name, or with a string an
// edit away from it, name being 4 bytes or more.
func startsLike(known, name string) bool {
	if len(name) < 4 {
		return false
	}
	for k := len(name) - 1; k <= len(name)+1 && k <= len(known); k++ {
		if editDistance(name, known[:k]) <= 1 {
			return true
		}
	}
	return false
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
