package template

import "strings"

// Limits on what Negotiate and language lookups read. Anything past them is
// ignored, so the work is bounded whatever a client sends.
const (
	maxAcceptLanguageBytes   = 4096
	maxAcceptLanguageEntries = 32
	maxTagBytes              = 64 // longer than any tag in real use; only the first subtags matter
)

// tagParts are the subtags of a language tag that choose the texts.
// Subtags keep the case they were written in.
type tagParts struct {
	primary, script, region string
	// narrower reports extlang, variant, extension or private-use subtags,
	// or a malformed subtag after which parsing stopped.
	narrower bool
}

// parseTag splits a BCP 47 language tag (or Accept-Language range) into the
// parts that matter here. "_" separates subtags like "-". A primary subtag
// that is not 2 to 8 letters yields the zero tagParts.
func parseTag(tag string) tagParts {
	tag = trimOWS(tag)
	if len(tag) > maxTagBytes {
		tag = tag[:maxTagBytes]
	}
	var p tagParts
	primary, rest := nextSubtag(tag)
	if len(primary) < 2 || len(primary) > 8 || !allBytes(primary, isAlpha) {
		return tagParts{}
	}
	p.primary = primary
	for rest != "" {
		var sub string
		sub, rest = nextSubtag(rest)
		early := p.script == "" && p.region == ""
		switch {
		case len(sub) < 2 || len(sub) > 8 || !allBytes(sub, isAlnum):
			// A singleton starts an extension or private use; anything
			// else malformed ends the parse.
			p.narrower = true
			return p
		case len(sub) == 3 && early && allBytes(sub, isAlpha): // extlang
			p.narrower = true
		case len(sub) == 4 && early && allBytes(sub, isAlpha):
			p.script = sub
		case p.region == "" && (len(sub) == 2 && allBytes(sub, isAlpha) || len(sub) == 3 && allBytes(sub, isDigit)):
			p.region = sub
		default: // variant
			p.narrower = true
		}
	}
	return p
}

func nextSubtag(s string) (sub, rest string) {
	if i := strings.IndexAny(s, "-_"); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

func allBytes(s string, f func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !f(s[i]) {
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlnum(c byte) bool { return isAlpha(c) || isDigit(c) }

// Indexes into langNames.
var (
	langIndex = func() map[string]int {
		m := make(map[string]int, len(langNames))
		for i, name := range langNames {
			m[name] = i
		}
		if len(langNames) > 64 {
			panic("waitingroom/template: more than 64 languages") // Negotiate keeps a 64-bit set
		}
		return m
	}()
	idxZhCN, idxZhTW = langIndex["zh-CN"], langIndex["zh-TW"]

	// langParts are the parts of each language in langNames, with the
	// script the two Chinese ones imply.
	langParts = func() []tagParts {
		parts := make([]tagParts, len(langNames))
		for i, name := range langNames {
			parts[i] = parseTag(name)
		}
		parts[idxZhCN].script, parts[idxZhTW].script = "Hans", "Hant"
		return parts
	}()

	// primaries maps a lower-case primary language subtag to the language
	// serving it; Chinese, with two, is chosen apart.
	primaries = func() map[string]int {
		m := make(map[string]int, len(langNames))
		for i, p := range langParts {
			if !equalTag(p.primary, "zh") {
				m[strings.ToLower(p.primary)] = i
			}
		}
		return m
	}()
)

// resolveParts returns the index of the language whose texts serve p.
func resolveParts(p tagParts) (int, bool) {
	if equalTag(p.primary, "zh") {
		switch {
		case equalTag(p.script, "Hant"):
			return idxZhTW, true
		case equalTag(p.script, "Hans"):
			return idxZhCN, true
		case equalTag(p.region, "TW"), equalTag(p.region, "HK"), equalTag(p.region, "MO"):
			return idxZhTW, true
		}
		return idxZhCN, true
	}
	var lower [8]byte
	n := copy(lower[:], p.primary)
	for i := range n {
		lower[i] = lowerTagByte(lower[i])
	}
	i, ok := primaries[string(lower[:n])]
	return i, ok
}

// resolve returns the index of the language whose texts serve tag.
func resolve(tag string) (int, bool) {
	return resolveParts(parseTag(tag))
}

// covers reports whether the language range r, given with q=0, rules out
// the language l: every subtag r names agrees with l. "zh" covers zh-CN and
// zh-TW, "zh-Hant" covers zh-TW, "pt" covers pt-BR; "en-GB" and "pt-PT"
// cover none of the languages, which are not regional variants of theirs.
func covers(r, l tagParts) bool {
	return !r.narrower && r.primary != "" &&
		equalTag(r.primary, l.primary) &&
		(r.script == "" || equalTag(r.script, l.script)) &&
		(r.region == "" || equalTag(r.region, l.region))
}

// lookupLang returns the texts for a BCP 47 tag, English when there are
// none.
func lookupLang(tag string) *compiledLang {
	if c, ok := compiled[tag]; ok {
		return c
	}
	if i, ok := resolve(tag); ok {
		return compiled[langNames[i]]
	}
	return compiled[fallbackLang]
}

// equalTag compares language tags ASCII case-insensitively, treating "_"
// as "-".
func equalTag(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerTagByte(a[i]) != lowerTagByte(b[i]) {
			return false
		}
	}
	return true
}

func lowerTagByte(c byte) byte {
	switch {
	case 'A' <= c && c <= 'Z':
		return c + ('a' - 'A')
	case c == '_':
		return '-'
	}
	return c
}

// Languages returns the BCP 47 tags of the languages the default page has
// texts for, sorted: ar, de, en, es, fr, hi, it, ja, ko, nl, pl, pt-BR, tr,
// zh-CN, zh-TW. The caller owns the returned slice. It is safe for
// concurrent use.
func Languages() []string {
	return append([]string(nil), langNames...)
}

// Supported reports whether the default page, FormatWait and
// FormatWaitRange have texts for the BCP 47 tag lang; when it reports false
// they use English. A tag is supported when its language is one of
// Languages, whatever its region: case and "_" for "-" do not matter, a
// regional variant uses its language (en-GB and en-US use en, de-CH uses de,
// pt and pt-PT use pt-BR), and Chinese follows the script, then the region
// (zh-Hant, zh-TW, zh-HK and zh-MO use zh-TW; zh, zh-Hans, zh-CN and zh-SG
// use zh-CN). The empty tag is not supported. Supported is safe for
// concurrent use.
func Supported(lang string) bool {
	_, ok := resolve(lang)
	return ok
}

// Negotiate chooses the language of the default page from an
// Accept-Language request header value (RFC 9110, section 12.5.4). It
// returns the one of Languages that the highest-weighted range asks for,
// the first listed among equal weights; a range is matched as in Supported,
// so "pt" gives "pt-BR", "zh-Hant" and "zh-HK" give "zh-TW", "en-GB" gives
// "en". The range "*" asks for fallback.
//
// A weight of q=0 rules out the languages the range covers ("de;q=0" rules
// out de, "zh;q=0" both kinds of Chinese). Ranges of languages without
// texts, malformed ranges and ranges with a malformed weight (more than three
// decimals, above 1) are ignored.
//
// Negotiate returns fallback, unchanged, when nothing matches, including for
// an empty header; pass one of Languages or the configured language.
//
// Only the first 4 KiB and the first 32 ranges of the value are looked at,
// so the work is bounded whatever a client sends; malformed input never
// makes it panic. It allocates nothing and is safe for concurrent use.
func Negotiate(acceptLanguage, fallback string) string {
	s := acceptLanguage
	truncated := false
	if len(s) > maxAcceptLanguageBytes {
		s, truncated = s[:maxAcceptLanguageBytes], true
	}
	type candidate struct {
		lang   int // index into langNames, or -1 for "*"
		weight int // thousandths, > 0
	}
	var (
		cands    [maxAcceptLanguageEntries]candidate
		nc       int
		excluded uint64 // bit i: langNames[i] ruled out by q=0
	)
	for entries := 0; entries < maxAcceptLanguageEntries && s != ""; {
		entry, rest, more := strings.Cut(s, ",")
		s = rest
		if !more && truncated {
			break // the entry was cut off at the limit: don't guess
		}
		rng, params, _ := strings.Cut(entry, ";")
		rng = trimOWS(rng)
		if rng == "" {
			continue
		}
		entries++
		weight, ok := parseWeight(params)
		if !ok {
			continue
		}
		if rng == "*" {
			if weight > 0 {
				cands[nc] = candidate{lang: -1, weight: weight}
				nc++
			}
			continue
		}
		p := parseTag(rng)
		if weight == 0 {
			for i := range langParts {
				if covers(p, langParts[i]) {
					excluded |= 1 << i
				}
			}
			continue
		}
		if i, ok := resolveParts(p); ok {
			cands[nc] = candidate{lang: i, weight: weight}
			nc++
		}
	}

	best, bestWeight := fallback, 0
	for _, c := range cands[:nc] {
		if c.weight <= bestWeight {
			continue
		}
		lang := c.lang
		if lang < 0 {
			if i, ok := resolve(fallback); ok && excluded&(1<<i) != 0 {
				continue
			}
			best, bestWeight = fallback, c.weight
			continue
		}
		if excluded&(1<<lang) != 0 {
			continue
		}
		best, bestWeight = langNames[lang], c.weight
	}
	return best
}

// parseWeight returns the weight in thousandths given by the parameters of
// an Accept-Language range: 1000 without a q parameter; ok is false for a
// malformed q. Only the first q parameter counts.
func parseWeight(params string) (weight int, ok bool) {
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		name, value, found := strings.Cut(p, "=")
		if !found || !asciiEqualFold(trimOWS(name), "q") {
			continue
		}
		return parseQValue(trimOWS(value))
	}
	return 1000, true
}

// parseQValue parses a qvalue: "0" or "1", optionally followed by "." and up
// to three digits, at most 1.
func parseQValue(v string) (int, bool) {
	if v == "" || v[0] != '0' && v[0] != '1' {
		return 0, false
	}
	whole := int(v[0] - '0')
	v = v[1:]
	if v == "" {
		return whole * 1000, true
	}
	if v[0] != '.' || len(v) > 4 {
		return 0, false
	}
	frac, scale := 0, 100
	for i := 1; i < len(v); i++ {
		if !isDigit(v[i]) {
			return 0, false
		}
		frac += int(v[i]-'0') * scale
		scale /= 10
	}
	if whole == 1 && frac != 0 {
		return 0, false
	}
	return whole*1000 + frac, true
}
