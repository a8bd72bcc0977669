package template

import (
	"fmt"
	"sort"
	"strings"
)

// messages holds the texts of the default page in one language. Texts are
// plain text: the page escapes them, so they cannot carry markup.
//
// A text may hold one placeholder, which the page fills in: {wait} is the
// formatted wait time, {n} the refresh interval in seconds and {time} the
// time of the last update. Placing the placeholder anywhere in the sentence
// lets each language keep its own word order.
//
// To add a language, add an entry to the table below; default.html does not
// change.
type messages struct {
	// Dir is the writing direction, "ltr" or "rtl".
	Dir string
	// Plural maps a count to an index into the plural forms (Refresh) of
	// this language.
	Plural func(n int) int

	// Title is the browser tab's title while waiting.
	Title string
	// Heading is the page's heading while waiting.
	Heading string
	// Intro explains why the visitor waits (not shown with queueAll).
	Intro string
	// WaitFIFO states a known wait; {wait} is e.g. "10 minutes".
	WaitFIFO string
	// WaitRandom states a known wait under random queueing; {wait} is a
	// range such as "5 minutes to 15 minutes".
	WaitRandom string
	// WaitUnknown says that no estimate is available.
	WaitUnknown string
	// RandomNote explains random admission and that staying keeps the
	// visitor's chance.
	RandomNote string
	// QueueFull says that no one else can join the queue at the moment.
	QueueFull string
	// QueueAll says that the site admits no one at the moment.
	QueueAll string
	// KeepOpen asks the visitor to keep the page open.
	KeepOpen string
	// Refresh says how often the page reloads, one text per plural form;
	// {n} is the number of seconds.
	Refresh []string
	// LastUpdated introduces the time of the last update; {time} is that
	// time.
	LastUpdated string
	// ClosedTitle is the title and heading of a closed site (reject).
	ClosedTitle string
	// ClosedText says that the site takes no visitors (reject).
	ClosedText string
}

// languages is the table of the default page's texts, keyed by BCP 47
// language tag. "en" must exist: it is the fallback.
var languages = map[string]*messages{
	"en": {
		Dir: "ltr",
		Plural: func(n int) int {
			if n == 1 {
				return 0
			}
			return 1
		},
		Title:       "Waiting room",
		Heading:     "Thank you for waiting",
		Intro:       "The site is very busy right now, so visitors are being let in a few at a time.",
		WaitFIFO:    "Your estimated wait time is about {wait}.",
		WaitRandom:  "Your estimated wait time is {wait}.",
		WaitUnknown: "We cannot estimate your wait time right now.",
		RandomNote:  "Visitors are let in at random, not in order of arrival. Staying on this page keeps your chance of getting in.",
		QueueFull:   "The waiting room is full at the moment, so no one new can join the queue yet.",
		QueueAll:    "The site is not admitting anyone at the moment.",
		KeepOpen:    "Keep this page open. You will be taken to the site automatically.",
		Refresh: []string{
			"This page refreshes itself every {n} second.",
			"This page refreshes itself every {n} seconds.",
		},
		LastUpdated: "Last updated: {time}",
		ClosedTitle: "This site is closed",
		ClosedText:  "The site is not accepting visitors at the moment. Please try again later.",
	},
}

// fallbackLang is the language used for unknown tags.
const fallbackLang = "en"

// compiledLang is a language prepared for rendering: one ready-made map of
// texts per plural form, so rendering allocates nothing for texts. Keys carry
// internalPrefix.
type compiledLang struct {
	plural func(n int) int
	forms  []map[string]string // indexed by plural form of the refresh interval
}

var (
	compiled  = compileLanguages()
	langNames = sortedLanguageNames()
)

func sortedLanguageNames() []string {
	names := make([]string, 0, len(languages))
	for name := range languages {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func compileLanguages() map[string]*compiledLang {
	out := make(map[string]*compiledLang, len(languages))
	for tag, m := range languages {
		c, err := compileLang(tag, m)
		if err != nil {
			panic(err) // the table is tested; this cannot happen
		}
		out[tag] = c
	}
	if out[fallbackLang] == nil {
		panic("waitingroom/template: no texts for fallback language " + fallbackLang)
	}
	return out
}

func compileLang(tag string, m *messages) (*compiledLang, error) {
	if m.Dir != "ltr" && m.Dir != "rtl" {
		return nil, fmt.Errorf("waitingroom/template: language %q: dir %q", tag, m.Dir)
	}
	if m.Plural == nil || len(m.Refresh) == 0 {
		return nil, fmt.Errorf("waitingroom/template: language %q: no plural forms", tag)
	}
	base := map[string]string{
		"lang":        tag,
		"dir":         m.Dir,
		"title":       m.Title,
		"heading":     m.Heading,
		"intro":       m.Intro,
		"waitUnknown": m.WaitUnknown,
		"randomNote":  m.RandomNote,
		"queueFull":   m.QueueFull,
		"queueAll":    m.QueueAll,
		"keepOpen":    m.KeepOpen,
		"closedTitle": m.ClosedTitle,
		"closedText":  m.ClosedText,
	}
	for k, v := range base {
		if v == "" {
			return nil, fmt.Errorf("waitingroom/template: language %q: empty text %s", tag, k)
		}
	}
	split := []struct{ key, text, placeholder string }{
		{"waitFIFO", m.WaitFIFO, "{wait}"},
		{"waitRandom", m.WaitRandom, "{wait}"},
		{"lastUpdated", m.LastUpdated, "{time}"},
	}
	for _, s := range split {
		before, after, err := splitPlaceholder(s.text, s.placeholder)
		if err != nil {
			return nil, fmt.Errorf("waitingroom/template: language %q: %s: %w", tag, s.key, err)
		}
		base[s.key+"Before"], base[s.key+"After"] = before, after
	}
	c := &compiledLang{plural: m.Plural}
	for i, text := range m.Refresh {
		before, after, err := splitPlaceholder(text, "{n}")
		if err != nil {
			return nil, fmt.Errorf("waitingroom/template: language %q: refresh[%d]: %w", tag, i, err)
		}
		form := make(map[string]string, len(base)+2)
		for k, v := range base {
			form[k] = v
		}
		form["refreshBefore"], form["refreshAfter"] = before, after
		prefixed := make(map[string]string, len(form))
		for k, v := range form {
			prefixed[internalPrefix+k] = v
		}
		c.forms = append(c.forms, prefixed)
	}
	return c, nil
}

// splitPlaceholder splits text around the one occurrence of placeholder.
func splitPlaceholder(text, placeholder string) (before, after string, err error) {
	if strings.Count(text, placeholder) != 1 {
		return "", "", fmt.Errorf("%q must contain %s exactly once", text, placeholder)
	}
	before, after, _ = strings.Cut(text, placeholder)
	return before, after, nil
}

// textsFor returns the texts for a page refreshing every n seconds.
func (c *compiledLang) textsFor(n int) map[string]string {
	i := c.plural(n)
	if i < 0 || i >= len(c.forms) {
		i = len(c.forms) - 1
	}
	return c.forms[i]
}

// lookupLang returns the texts for a BCP 47 tag: an exact match (ignoring
// case and "_" for "-"), else the primary language subtag, else English.
func lookupLang(tag string) *compiledLang {
	if c, ok := compiled[tag]; ok {
		return c
	}
	if len(tag) > 64 { // longer than any real tag; only the start matters
		tag = tag[:64]
	}
	tag = strings.TrimSpace(tag)
	for _, name := range langNames {
		if equalTag(tag, name) {
			return compiled[name]
		}
	}
	if i := strings.IndexAny(tag, "-_"); i >= 0 {
		primary := tag[:i]
		for _, name := range langNames {
			if equalTag(primary, name) {
				return compiled[name]
			}
		}
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
		x, y := lowerTagByte(a[i]), lowerTagByte(b[i])
		if x != y {
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
// texts for, sorted. Render falls back to "en" for any other tag.
func Languages() []string {
	return append([]string(nil), langNames...)
}
