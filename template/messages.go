package template

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// messages holds the texts of the default page in one language, and how the
// language writes a wait. Texts are plain text: the page escapes them, so
// they cannot carry markup.
//
// A text may hold one placeholder, which is filled in: {wait} is the
// formatted wait time, {time} a formatted duration or the time of the last
// update, {n} a count, {command} the verifier's command (waitingroom verify). Placing the placeholder anywhere in the sentence lets
// each language keep its own word order. Braces appear in no other way.
//
// Texts that depend on a count come as plurals, one text per CLDR plural
// category the language's Plural rule yields. A text for zero, one or two may
// leave out {n} when the word itself says the number (Arabic "دقيقتان", two
// minutes); the others must hold it.
//
// To add a language, add an entry to the table in languages.go; default.html
// does not change.
type messages struct {
	// Dir is the writing direction, "ltr" or "rtl".
	Dir string
	// Plural maps a count to its plural category.
	Plural pluralRule

	// Title is the browser tab's title while waiting.
	Title string
	// Heading is the page's heading while waiting.
	Heading string
	// Intro explains why the visitor waits (not shown with queueAll or
	// during an event's pre-queue).
	Intro string
	// WaitFIFO states a known wait; {wait} is e.g. "10 minutes".
	WaitFIFO string
	// WaitSoon replaces WaitFIFO for a wait under a minute (waitTime 0),
	// which WaitFIFO's "about" does not suit.
	WaitSoon string
	// WaitRandom states a known wait under random queueing; {wait} is a
	// range such as "5 minutes to 15 minutes" (see Range).
	WaitRandom string
	// WaitUnknown says that no estimate is available.
	WaitUnknown string
	// Position says about where the visitor is in a FIFO line; {n} is
	// the position (1 is next).
	Position string
	// Chance says the visitor's chance of getting in at each refresh of
	// a random queue, as 1 in {n}.
	Chance string
	// RandomNote explains random admission and that staying keeps the
	// visitor's chance.
	RandomNote string
	// QueueFull says that no one else can join the queue at the moment.
	QueueFull string
	// QueueAll says that the site admits no one at the moment.
	QueueAll string
	// KeepOpen asks the visitor to keep the page open.
	KeepOpen string
	// NeedsJS tells a visitor without JavaScript, given a challenge,
	// that they may not get in without it.
	NeedsJS string
	// Framed tells a visitor whose browser does not keep the room's
	// cookie inside another site's iframe that the room cannot keep
	// their place there.
	Framed string
	// OpenTab is the link, after Framed, that opens the waiting room in
	// its own tab.
	OpenTab string
	// Refresh says how often the page reloads; {n} is the number of
	// seconds.
	Refresh plurals
	// LastUpdated introduces the time of the last update; {time} is that
	// time.
	LastUpdated string
	// Clock writes the time of the last update without JavaScript: a Go
	// time layout for the time in UTC, hour and minute in the language's
	// usual form, the zone named. Empty means 24-hour "15:04 UTC".
	Clock string
	// DrawCheck is the summary of the section, shown where admission is
	// a draw (Data.LotteryIdentity), that gives what a visitor notes to
	// check the draw later ("Check the draw").
	DrawCheck string
	// DrawIdentity labels the visitor's identity in the draw.
	DrawIdentity string
	// DrawCommitment labels the commitment to the seed in force: the hour's
	// in random queueing, the event's for its shuffle.
	DrawCommitment string
	// DrawInterval labels the number of the refresh interval in progress.
	DrawInterval string
	// DrawOdds labels the odds of that interval's draw; DrawCut, the cut
	// of an event's shuffle in that interval instead.
	DrawOdds, DrawCut string
	// DrawRecords labels the link to the lottery's published record of
	// the period in progress (Data.LotteryRecords), where the draw is
	// checked once its seed is revealed.
	DrawRecords string
	// DrawNote says, in one sentence, that the seed is revealed once its
	// period (the hour, or the event) is over and that the draw can then be
	// checked with {command} (the command, waitingroom verify) or the
	// verifier page.
	DrawNote string

	// ClosedTitle is the title and heading of a closed site (reject).
	ClosedTitle string
	// ClosedText says that the site takes no visitors (reject).
	ClosedText string

	// EventIntro replaces Intro during an event's pre-queue: the event has
	// not started and the visitor is in its queue.
	EventIntro string
	// EventStarts says when the event starts; {time} is e.g. "10 minutes".
	EventStarts string
	// EventStartsSoon replaces EventStarts when no time is given.
	EventStartsSoon string
	// EventShuffle says that everyone in the queue before the event starts
	// gets a random place when it starts.
	EventShuffle string
	// EventEnds says when a running event ends; {time} is e.g. "1 hour".
	EventEnds string

	// LessThanMinute is a wait under a minute.
	LessThanMinute string
	// Unavailable stands for a wait or a time that is not known.
	Unavailable string
	// Minutes is a number of minutes, e.g. "{n} minutes".
	Minutes plurals
	// Hours is a number of hours, e.g. "{n} hours".
	Hours plurals
	// HoursMinutes joins hours and minutes, {h} before {m}: "{h} {m}".
	HoursMinutes string
	// Range joins the ends of a range, {lo} before {hi}: "{lo} to {hi}".
	Range string
	// RangeLessThanMinute, RangeMinutes and RangeHours are the forms used
	// within Range, for languages whose range words govern a case
	// (Polish "od 5 minut", genitive; Arabic "من دقيقتين"). Empty means
	// the same as LessThanMinute, Minutes and Hours.
	RangeLessThanMinute string
	RangeMinutes        plurals
	RangeHours          plurals
}

// fallbackLang is the language used for unknown tags.
const fallbackLang = "en"

// piece is a text split around its placeholder: before, the value, after.
// Without a placeholder (hasValue false) the text is before alone.
type piece struct {
	before, after string
	hasValue      bool
}

func (p piece) fill(value string) string {
	if !p.hasValue {
		return p.before
	}
	return p.before + value + p.after
}

// unitForms are the texts of a counted unit, by plural category.
type unitForms [numCategories]piece

// waitFormat is how a language writes a wait.
type waitFormat struct {
	lessThanMinute, rangeLessThanMinute string
	unavailable                         string
	minutes, hours                      unitForms
	rangeMinutes, rangeHours            unitForms
	hoursMinutes                        [3]string // before {h}, between, after {m}
	rng                                 [3]string // before {lo}, between, after {hi}
}

// compiledLang is a language prepared for rendering: one ready-made map of
// texts per plural category, so rendering allocates nothing for texts. Keys
// carry internalPrefix.
type compiledLang struct {
	tag    string
	plural pluralRule
	forms  [numCategories]map[string]string // by plural category of the refresh interval; nil when unused
	wait   waitFormat
	clock  string // the time layout of the last update (messages.Clock)
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

// pluralSamples are the counts whose categories every plural text must
// cover: enough to reach every category of every rule in the table.
var pluralSamples = func() []int {
	s := make([]int, 0, 1210)
	for n := 0; n <= 1200; n++ {
		s = append(s, n)
	}
	return append(s, 1000000, 2000000, 1000000000, math.MaxInt)
}()

func compileLang(tag string, m *messages) (*compiledLang, error) {
	errorf := func(format string, args ...any) error {
		return fmt.Errorf("waitingroom/template: language %q: "+format, append([]any{tag}, args...)...)
	}
	if m.Dir != "ltr" && m.Dir != "rtl" {
		return nil, errorf("dir %q", m.Dir)
	}
	if m.Plural == nil {
		return nil, errorf("no plural rule")
	}
	base, err := baseTexts(tag, m)
	if err != nil {
		return nil, errorf("%w", err)
	}

	split := []struct{ key, text, placeholder string }{
		{"waitFIFO", m.WaitFIFO, "{wait}"},
		{"waitRandom", m.WaitRandom, "{wait}"},
		{"lastUpdated", m.LastUpdated, "{time}"},
		{"eventStarts", m.EventStarts, "{time}"},
		{"eventEnds", m.EventEnds, "{time}"},
		{"position", m.Position, "{n}"},
		{"chance", m.Chance, "{n}"},
		{"drawNote", m.DrawNote, "{command}"},
	}
	for _, s := range split {
		p, err := splitPlaceholder(s.text, s.placeholder, false)
		if err != nil {
			return nil, errorf("%s: %w", s.key, err)
		}
		base[s.key+"Before"], base[s.key+"After"] = p.before, p.after
	}

	c := &compiledLang{tag: tag, plural: m.Plural, clock: m.Clock}
	if c.clock == "" {
		c.clock = defaultClock
	}
	if sample := clockSample.Format(c.clock); !strings.Contains(sample, "38") || !strings.Contains(sample, "UTC") || strings.ContainsAny(sample, "{}") {
		return nil, errorf("clock %q writes %q: no minute, no zone or a brace", c.clock, sample)
	}
	refresh, err := compileUnit(m.Plural, m.Refresh)
	if err != nil {
		return nil, errorf("refresh: %w", err)
	}
	for cat, p := range refresh {
		if m.Refresh[cat] == "" {
			continue
		}
		form := make(map[string]string, len(base)+3)
		for k, v := range base {
			form[internalPrefix+k] = v
		}
		form[internalPrefix+"refreshBefore"], form[internalPrefix+"refreshAfter"] = p.before, p.after
		form[internalPrefix+"refreshCount"] = ""
		if p.hasValue {
			form[internalPrefix+"refreshCount"] = "1"
		}
		c.forms[cat] = form
	}

	if c.wait, err = compileWait(m); err != nil {
		return nil, errorf("%w", err)
	}
	return c, nil
}

// baseTexts are m's texts that hold no placeholder, under their names in
// the page, for language tag, each checked: not empty, no brace.
func baseTexts(tag string, m *messages) (map[string]string, error) {
	base := map[string]string{
		"lang":            tag,
		"dir":             m.Dir,
		"title":           m.Title,
		"heading":         m.Heading,
		"intro":           m.Intro,
		"waitUnknown":     m.WaitUnknown,
		"waitSoon":        m.WaitSoon,
		"randomNote":      m.RandomNote,
		"queueFull":       m.QueueFull,
		"queueAll":        m.QueueAll,
		"keepOpen":        m.KeepOpen,
		"needsJS":         m.NeedsJS,
		"framed":          m.Framed,
		"openTab":         m.OpenTab,
		"closedTitle":     m.ClosedTitle,
		"closedText":      m.ClosedText,
		"eventIntro":      m.EventIntro,
		"eventStartsSoon": m.EventStartsSoon,
		"eventShuffle":    m.EventShuffle,
		"drawCheck":       m.DrawCheck,
		"drawIdentity":    m.DrawIdentity,
		"drawCommitment":  m.DrawCommitment,
		"drawInterval":    m.DrawInterval,
		"drawOdds":        m.DrawOdds,
		"drawCut":         m.DrawCut,
		"drawRecords":     m.DrawRecords,
	}
	for k, v := range base {
		if strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("empty text %s", k)
		}
		if strings.ContainsAny(v, "{}") {
			return nil, fmt.Errorf("%s: %q holds a brace", k, v)
		}
	}
	return base, nil
}

// compileWait checks and prepares how m writes a wait.
func compileWait(m *messages) (waitFormat, error) {
	var w waitFormat
	var err error
	w.lessThanMinute = m.LessThanMinute
	w.rangeLessThanMinute = m.RangeLessThanMinute
	if w.rangeLessThanMinute == "" {
		w.rangeLessThanMinute = w.lessThanMinute
	}
	w.unavailable = m.Unavailable
	for _, s := range []string{w.lessThanMinute, w.rangeLessThanMinute, w.unavailable} {
		if strings.TrimSpace(s) == "" || strings.ContainsAny(s, "{}") {
			return w, fmt.Errorf("less than a minute or unavailable: %q", s)
		}
	}
	units := []struct {
		name string
		dst  *unitForms
		src  plurals
	}{
		{"minutes", &w.minutes, m.Minutes},
		{"hours", &w.hours, m.Hours},
		{"range minutes", &w.rangeMinutes, m.RangeMinutes},
		{"range hours", &w.rangeHours, m.RangeHours},
	}
	for _, u := range units {
		if u.src == (plurals{}) {
			continue // optional range forms
		}
		if *u.dst, err = compileUnit(m.Plural, u.src); err != nil {
			return w, fmt.Errorf("%s: %w", u.name, err)
		}
	}
	if m.RangeMinutes == (plurals{}) {
		w.rangeMinutes = w.minutes
	}
	if m.RangeHours == (plurals{}) {
		w.rangeHours = w.hours
	}
	if m.Minutes == (plurals{}) || m.Hours == (plurals{}) {
		return w, fmt.Errorf("no minutes or hours")
	}
	if w.hoursMinutes, err = splitTwo(m.HoursMinutes, "{h}", "{m}"); err != nil {
		return w, fmt.Errorf("hours and minutes: %w", err)
	}
	if w.rng, err = splitTwo(m.Range, "{lo}", "{hi}"); err != nil {
		return w, fmt.Errorf("range: %w", err)
	}
	return w, nil
}

// compileUnit checks that forms has a text for every category rule yields
// and splits each text around {n}.
func compileUnit(rule pluralRule, forms plurals) (unitForms, error) {
	var out unitForms
	for _, n := range pluralSamples {
		if c := rule(n); forms[c] == "" {
			return out, fmt.Errorf("no %s form (for %d)", c, n)
		}
	}
	for cat, text := range forms {
		if text == "" {
			continue
		}
		c := pluralCategory(cat)
		p, err := splitPlaceholder(text, "{n}", c == zero || c == one || c == two)
		if err != nil {
			return out, fmt.Errorf("%s: %w", c, err)
		}
		out[cat] = p
	}
	return out, nil
}

// splitPlaceholder splits text around the one occurrence of placeholder;
// with optional set, text may also leave it out.
func splitPlaceholder(text, placeholder string, optional bool) (piece, error) {
	if strings.TrimSpace(text) == "" {
		return piece{}, fmt.Errorf("empty text")
	}
	n := strings.Count(text, placeholder)
	if n > 1 || n == 0 && !optional {
		return piece{}, fmt.Errorf("%q must contain %s exactly once", text, placeholder)
	}
	before, after, found := strings.Cut(text, placeholder)
	if strings.ContainsAny(before, "{}") || strings.ContainsAny(after, "{}") {
		return piece{}, fmt.Errorf("%q holds a brace other than %s", text, placeholder)
	}
	return piece{before: before, after: after, hasValue: found}, nil
}

// splitTwo splits text around first and second, which must each occur once
// and in this order.
func splitTwo(text, first, second string) ([3]string, error) {
	before, rest, ok1 := strings.Cut(text, first)
	between, after, ok2 := strings.Cut(rest, second)
	if !ok1 || !ok2 || strings.Count(text, first) != 1 || strings.Count(text, second) != 1 {
		return [3]string{}, fmt.Errorf("%q must contain %s, then %s, once each", text, first, second)
	}
	for _, s := range []string{before, between, after} {
		if strings.ContainsAny(s, "{}") {
			return [3]string{}, fmt.Errorf("%q holds a brace other than %s and %s", text, first, second)
		}
	}
	return [3]string{before, between, after}, nil
}

// defaultClock is the layout of messages.Clock left empty; clockSample
// checks a layout.
const defaultClock = "15:04 UTC"

var clockSample = time.Date(2026, 12, 3, 15, 38, 18, 0, time.UTC)

// formatClock writes iso, a time in RFC 3339 (Data.LastUpdated), as the
// page shows it without JavaScript: the time of day in UTC. A value that
// is no such time is shown as it is.
func (c *compiledLang) formatClock(iso string) string {
	t, err := time.Parse(time.RFC3339Nano, iso)
	if err != nil {
		return iso
	}
	return t.UTC().Format(c.clock)
}

// textsFor returns the texts for a page refreshing every n seconds.
func (c *compiledLang) textsFor(n int) map[string]string {
	if f := c.forms[category(c.plural, n)]; f != nil {
		return f
	}
	return c.forms[other]
}

// count writes n in the form of its plural category.
func (c *compiledLang) count(u *unitForms, n int) string {
	p := u[category(c.plural, n)]
	if p == (piece{}) {
		p = u[other]
	}
	return p.fill(strconv.Itoa(n))
}

// formatWait writes a wait of minutes, in the forms used within a range
// when inRange is set.
func (c *compiledLang) formatWait(minutes int, inRange bool) string {
	w := &c.wait
	less, mins, hours := w.lessThanMinute, &w.minutes, &w.hours
	if inRange {
		less, mins, hours = w.rangeLessThanMinute, &w.rangeMinutes, &w.rangeHours
	}
	if minutes <= 0 {
		return less
	}
	h, m := minutes/60, minutes%60
	if h == 0 {
		return c.count(mins, m)
	}
	hs := c.count(hours, h)
	if m == 0 {
		return hs
	}
	j := &w.hoursMinutes
	return j[0] + hs + j[1] + c.count(mins, m) + j[2]
}

// formatWaitRange writes a range of waits.
func (c *compiledLang) formatWaitRange(lo, hi int) string {
	r := &c.wait.rng
	return r[0] + c.formatWait(lo, true) + r[1] + c.formatWait(hi, true) + r[2]
}
