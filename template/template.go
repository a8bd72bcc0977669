// Package template renders the page a waiting visitor sees, and its JSON
// counterpart for clients that are not browsers.
//
// A page is a Mustache template (https://mustache.github.io/mustache.5.html).
// The package embeds a default page: self-contained (inline CSS and one
// inline script, no external assets), accessible, readable on small screens,
// light and dark. With JavaScript it updates itself in place (see Live
// page); without, it reloads itself.
// Operators may supply their own page with Parse; templates written for the
// commercial waiting rooms port unchanged because the variables carry the
// same names.
//
// # Variables
//
// A template receives these variables (see Data for the Go fields):
//
//	inWaitingRoom                 bool    the visitor is being held in the waiting room
//	waitTimeKnown                 bool    an estimate of the wait is available
//	waitTime                      number  estimated wait in minutes
//	waitTimeHours                 number  whole hours of waitTime
//	waitTimeHourMinutes           number  minutes of waitTime past waitTimeHours
//	waitTime25Percentile          number  random queueing: 25th percentile of the wait in minutes (0 for FIFO)
//	waitTime50Percentile          number  random queueing: median wait in minutes (0 for FIFO)
//	waitTime75Percentile          number  random queueing: 75th percentile of the wait in minutes (0 for FIFO)
//	waitTimeFormatted             string  the wait for people, e.g. "10 minutes" or "5 minutes to 15 minutes"
//	queueIsFull                   bool    no more visitors can join the queue at the moment
//	queueAll                      bool    the site admits no one at the moment; everyone waits
//	lastUpdated                   string  the visitor's latest attempt to get in, ISO 8601 UTC (2020-08-03T23:46:00.000Z)
//	refreshIntervalSeconds        number  seconds from lastUpdated to the visitor's next chance (reject: the room's refresh interval)
//	queueingMethod                string  fifo, random, passthrough or reject
//	isFIFOQueue                   bool    queueingMethod is fifo
//	isRandomQueue                 bool    queueingMethod is random
//	isPassthroughQueue            bool    queueingMethod is passthrough
//	isRejectQueue                 bool    queueingMethod is reject: the site takes no visitors
//	isEventActive                 bool    a scheduled event governs the room, its pre-queue included
//	isEventPrequeueing            bool    a scheduled event has not started; visitors queue for it
//	timeUntilEventStart           number  minutes until the event starts (0 when none is pending)
//	timeUntilEventStartFormatted  string  the same for people, e.g. "10 minutes"
//	timeUntilEventEnd             number  minutes until the running event ends (0 when unknown)
//	timeUntilEventEndFormatted    string  the same for people, e.g. "1 hour"
//	shuffleAtEventStart           bool    the visitor, in the event's pre-queue, gets a random place in it when the event starts
//	positionInLine                number  FIFO: the visitor's place in line, 1 being next (0 when not known)
//	queueLength                   number  the number of visitors in line, the visitor included (0 when nobody waits for a slot)
//	chancePerRefreshOneIn         number  random: the chance of getting in at each refresh is about 1 in this (0 when not known)
//	lotteryIdentity               string  where admission is a draw (random, a shuffled pre-queue): the visitor's identity in the lottery, 16 hex digits ("" otherwise)
//	lotteryCommitment             string  with lotteryIdentity: the commitment to the seed of the lottery's period in progress
//	lotteryInterval               int     with lotteryIdentity: the number of the refresh interval in progress (0 until its odds are fixed)
//	lotteryOdds                   float   with lotteryInterval: the published odds of that interval's draw, in [0, 1], written as in the JSON (0.00001)
//	lotteryShuffled               bool    with lotteryOdds: they are the cut of an event's shuffle (the share of its places let in), not a draw's odds
//	lotteryRecords                string  with lotteryIdentity, where the room says (Options.LotteryRecords): the URL of the published record of the period in progress ("" otherwise)
//
// The last nine are this package's own: the commercial product shows
// none of them, and templates written for it do not use them. So are two slots
// of markup, placed unescaped ({{{name}}}), in no JSON:
//
//	turnstile                     markup  the challenge's script or widget (ChallengeScriptFor); the product's name for the slot
//	liveScript                    markup  the live page's script (LiveScript)
//
// # Live page
//
// A page that places {{{liveScript}}} (the default page does, after its
// content and before {{{turnstile}}}) updates itself with JavaScript: once
// loaded, it stops its own refresh and asks the same URL for its JSON
// (Accept: application/json) when the refresh is due, first
// refreshIntervalSeconds after it loaded, then as each answer's Refresh
// header says: never sooner than a reload. It navigates, as the reload
// would, when the answer is not the waiting JSON (the visitor is in),
// the site is closed or a challenge is given. Elements of the page say
// what to update:
//
//	data-wr-if="a !b"               shown while a is true and b false (false, 0, "" and none are false)
//	data-wr-text="name"             shows the value of name; data-wr-or="text": text while name is missing from the JSON
//	data-wr-href="name"             links to the value of name (its href; none while name is missing or "")
//	<template data-wr-unfold="a !b"> replaced by its content once a is true and b false: a section the page was served without
//	<time data-wr-time="name">      the time name (lastUpdated), in the page's language and the visitor's time zone
//	<template data-wr-lines="id">   the lines of the element id, each a child with its data-wr-if; a line whose text is unchanged stays, so a live region announces only changes
//	data-wr-framed, data-wr-self    shown, and linking to the page, inside another site's iframe whose browser does not keep the room's cookie; the page then asks nothing more
//
// Without JavaScript the page's meta refresh reloads it, as before; a
// page with a challenge keeps that refresh inside <noscript>, and the
// default page says there that it needs JavaScript.
//
// Booleans open sections ({{#queueIsFull}}...{{/queueIsFull}}) and inverted
// sections ({{^waitTimeKnown}}...{{/waitTimeKnown}}). {{name}} escapes HTML;
// {{{name}}} and {{&name}} do not and should not be used for strings.
// Partials ({{> name}}) are not supported.
//
// A name no page fills, in a variable, a section or an inverted section,
// would render empty (or hide its section) without a word: Parse refuses
// it with an error wrapping ErrUnknownVariable that names the tag, its line
// and the closest variable ("{{#isFifoQueue}} on line 5 (did you mean
// isFIFOQueue?)"). Every variable of the commercial product's reference is
// filled, so a template written for it parses; so does one copied from the
// default page, whose texts (wr_...) every page is given. ParseAllowUnknown
// accepts such names and lists them (Template.Unknown): the room uses it
// for templates that reach it through the shared settings, written by an
// instance of another release, and logs them as warnings.
//
// A page that reloads itself should carry
//
//	<meta http-equiv="refresh" content="{{refreshIntervalSeconds}}">
//
// except when isRejectQueue is set.
//
// # JSON
//
// WantsJSON tells from an Accept header whether a client asked for JSON
// rather than a page; WriteJSON then writes the same variables as a JSON
// object under a key the caller chooses.
//
// # Languages
//
// The default page has texts in the languages Languages lists (among them
// Arabic, written right to left); Render picks the texts for the visitor's
// language and falls back to English. Negotiate chooses that language from
// an Accept-Language header; Supported tells whether a tag has texts.
// Custom templates hold their own texts and ignore the language.
//
// The page shows waitTimeFormatted, timeUntilEventStartFormatted and
// timeUntilEventEndFormatted as the caller formatted them; lastUpdated
// as the time of day in UTC in the page's language ("3:38 PM UTC",
// "15:38 UTC"), which the live script writes in the visitor's time zone,
// named ("7:38:18 AM PST").
// FormatWait and FormatWaitRange write waits in each language with its
// plural forms ("1 minute", "2 minuty", "5 minut"); pass them the language
// passed to Render.
package template

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/cbroglie/mustache"
)

// Data is everything a waiting page shows. Field names on the wire (JSON)
// and in Mustache templates are those of the commercial product, so existing
// templates and clients port unchanged; they are listed in the package
// documentation.
type Data struct {
	// InWaitingRoom reports whether the visitor is held in the waiting room.
	InWaitingRoom bool `json:"inWaitingRoom"`
	// WaitTimeKnown reports whether an estimate of the wait is available.
	WaitTimeKnown bool `json:"waitTimeKnown"`
	// WaitTime is the estimated wait in minutes.
	WaitTime int `json:"waitTime"`
	// WaitTimeHours is the whole hours of WaitTime.
	WaitTimeHours int `json:"waitTimeHours"`
	// WaitTimeHourMinutes is the minutes of WaitTime past WaitTimeHours.
	WaitTimeHourMinutes int `json:"waitTimeHourMinutes"`
	// WaitTime25Percentile is, for random queueing, the 25th percentile of
	// the wait in minutes; 0 for FIFO.
	WaitTime25Percentile int `json:"waitTime25Percentile"`
	// WaitTime50Percentile is, for random queueing, the median wait in
	// minutes; 0 for FIFO.
	WaitTime50Percentile int `json:"waitTime50Percentile"`
	// WaitTime75Percentile is, for random queueing, the 75th percentile of
	// the wait in minutes; 0 for FIFO.
	WaitTime75Percentile int `json:"waitTime75Percentile"`
	// WaitTimeFormatted is the wait for people to read, e.g. "10 minutes"
	// or, for random queueing, "5 minutes to 15 minutes": FormatWait or
	// FormatWaitRange in the language of the page.
	WaitTimeFormatted string `json:"waitTimeFormatted"`
	// QueueIsFull reports that no more visitors can join the queue.
	QueueIsFull bool `json:"queueIsFull"`
	// QueueAll reports that the site admits no one at the moment.
	QueueAll bool `json:"queueAll"`
	// LastUpdated is the visitor's latest attempt to get in, ISO 8601 in
	// UTC with milliseconds (the room writes whole seconds), e.g.
	// 2020-08-03T23:46:00.000Z. A request before the next chance is no
	// attempt and leaves it as it was.
	LastUpdated string `json:"lastUpdated"`
	// RefreshIntervalSeconds is the number of seconds from LastUpdated to
	// the visitor's next chance: an early refresh does not shorten it.
	// The page reloads itself after it (the room's Refresh header says
	// how long is left). On the closed page (IsRejectQueue), where there
	// is no chance to wait for, it is the room's refresh interval, never
	// 0, so that a template reloading itself after it does not loop; the
	// default page does not reload the closed page.
	RefreshIntervalSeconds int `json:"refreshIntervalSeconds"`
	// QueueingMethod is fifo, random, passthrough or reject.
	QueueingMethod string `json:"queueingMethod"`
	// IsFIFOQueue reports that QueueingMethod is fifo.
	IsFIFOQueue bool `json:"isFIFOQueue"`
	// IsRandomQueue reports that QueueingMethod is random.
	IsRandomQueue bool `json:"isRandomQueue"`
	// IsPassthroughQueue reports that QueueingMethod is passthrough.
	IsPassthroughQueue bool `json:"isPassthroughQueue"`
	// IsRejectQueue reports that QueueingMethod is reject: the site takes no
	// visitors and the page does not reload itself.
	IsRejectQueue bool `json:"isRejectQueue"`

	// IsEventActive reports that a scheduled event governs the room: from
	// the opening of its pre-queue, if it has one, to its end.
	IsEventActive bool `json:"isEventActive"`
	// IsEventPrequeueing reports that a scheduled event has not started
	// yet and visitors queue for it. The default page then says when the
	// event starts instead of showing the wait.
	IsEventPrequeueing bool `json:"isEventPrequeueing"`
	// TimeUntilEventStart is the number of minutes until the event starts;
	// 0 when no event is pending.
	TimeUntilEventStart int `json:"timeUntilEventStart"`
	// TimeUntilEventStartFormatted is TimeUntilEventStart for people to
	// read, e.g. FormatWait(lang, TimeUntilEventStart). The default page
	// shows it during the pre-queue; when empty, it says the event starts
	// soon.
	TimeUntilEventStartFormatted string `json:"timeUntilEventStartFormatted"`
	// TimeUntilEventEnd is the number of minutes until the running event
	// ends; 0 when unknown or no event is running.
	TimeUntilEventEnd int `json:"timeUntilEventEnd"`
	// TimeUntilEventEndFormatted is TimeUntilEventEnd for people to read,
	// e.g. FormatWait(lang, TimeUntilEventEnd). The default page shows it
	// while IsEventActive is set and it is not empty.
	TimeUntilEventEndFormatted string `json:"timeUntilEventEndFormatted"`
	// ShuffleAtEventStart reports that the visitor is in the pre-queue
	// of an event that gives everyone in it a random place when it
	// starts (not those who queued before it opened: they go first). The
	// default page says so during the pre-queue.
	ShuffleAtEventStart bool `json:"shuffleAtEventStart"`

	// PositionInLine is, for FIFO queueing, the visitor's place in line:
	// 1 is next. It counts the visitors waiting who arrived in an earlier
	// second, as of the room's latest sync, and never goes up for a
	// visitor. 0 when not known (random queueing, queueAll, a pre-queue).
	PositionInLine int `json:"positionInLine"`
	// QueueLength is the number of visitors in line, the visitor
	// included, as of the room's latest sync. 0 when nobody waits for a
	// slot (queueAll, a pre-queue, passthrough).
	QueueLength int `json:"queueLength"`
	// ChancePerRefreshOneIn is, for random queueing, the visitor's chance
	// of getting in at each refresh, as 1 in ChancePerRefreshOneIn (1:
	// certain). 0 when not known (FIFO queueing, queueAll, a pre-queue,
	// an unknown wait).
	ChancePerRefreshOneIn int `json:"chancePerRefreshOneIn"`
	// LotteryIdentity is, where admission is a draw (random queueing,
	// or an event's shuffled pre-queue,
	// docs/lottery.md), the visitor's identity in it: 16 hex digits
	// (lottery.FormatIdentity), what their draws and place are made of
	// and what the verifier asks for. "" otherwise (absent from the
	// JSON).
	LotteryIdentity string `json:"lotteryIdentity,omitempty"`
	// LotteryCommitment is, with LotteryIdentity, the commitment to the
	// seed of the lottery's period that the refresh interval in progress
	// draws under, the one that holds its last millisecond (hex SHA-256,
	// lottery.Commit), published before the period began.
	LotteryCommitment string `json:"lotteryCommitment,omitempty"`
	// LotteryInterval and LotteryOdds are, with LotteryIdentity, the
	// number of the refresh interval in progress (its first ms over the
	// interval's length) and the odds of its draw as the room published
	// them, in [0, 1]: what a visitor notes to check the draw later. For
	// a visitor of an event's shuffled pre-queue, once it started, the
	// odds are the cut fixed in the interval (the share of its places let
	// in; none in an interval where it did not move). 0 (absent from the
	// JSON) until the room has fixed the interval's odds.
	LotteryInterval int64   `json:"lotteryInterval,omitempty"`
	LotteryOdds     float64 `json:"lotteryOdds,omitempty"`
	// LotteryShuffled says that LotteryOdds is the cut of an event's
	// shuffle, not a draw's odds. false (absent from the JSON) otherwise.
	LotteryShuffled bool `json:"lotteryShuffled,omitempty"`
	// LotteryRecords is, with LotteryIdentity, where the room publishes
	// its lottery's records (Options.LotteryRecords): the URL of the
	// record of that period, the one holding LotteryCommitment
	// (admin.Records with ?at= its start, Unix seconds). "" (absent from
	// the JSON) where the room does not say.
	LotteryRecords string `json:"lotteryRecords,omitempty"`

	// Challenge is the challenge the visitor must pass before their next
	// chance: "pow" (the built-in proof of work), or a hosted provider's
	// name ("turnstile", "hcaptcha", "recaptcha"); "" for none (absent
	// from the JSON).
	Challenge string `json:"challenge,omitempty"`
	// ChallengePuzzle is the proof of work to solve: "<seed>.<seconds>.
	// <difficulty>". The answer is the puzzle, a dot and the decimal
	// number n for which SHA-256 of the answer starts with difficulty
	// zero bits (challenge.Solve); a JSON client sends it in the
	// Waiting-Room-Challenge header of its next request, when
	// refreshIntervalSeconds have passed since lastUpdated.
	ChallengePuzzle string `json:"challengePuzzle,omitempty"`
	// ChallengeSiteKey is a hosted challenge's public site key.
	ChallengeSiteKey string `json:"challengeSiteKey,omitempty"`
	// ChallengeWidget is the markup that answers the challenge in a
	// browser (ChallengeScript), which templates place with
	// {{{turnstile}}} (the name the commercial product gives the slot).
	// Not in the JSON.
	ChallengeWidget string `json:"-"`

	// CookieAttributes are the attributes of the room's visitor cookie as
	// a Set-Cookie header writes them after the value, without HttpOnly,
	// e.g. "; Path=/; Secure; SameSite=None; Partitioned". The page's
	// scripts write their cookies (the challenge's answer,
	// ChallengeScriptFor) with them, so that these come back wherever the
	// visitor cookie does. Neither in the JSON nor a template variable.
	CookieAttributes string `json:"-"`
}

// internalPrefix starts the names of the variables through which the default
// page finds its localized texts, language and direction ({{wr_title}},
// {{wr_lang}}, ...). They live in a second, prepared context behind the one
// vars returns, so custom templates see them too; they are not part of the
// documented set.
const internalPrefix = "wr_"

// lastUpdatedTime is the internal variable holding lastUpdated as the
// default page shows it without JavaScript: the time of day in UTC, in the
// page's language ("15:38 UTC"); the live script then writes it in the
// visitor's time zone.
const lastUpdatedTime = internalPrefix + "lastUpdatedTime"

// vars returns the Mustache context for d: the documented variables under
// their JSON names.
func (d *Data) vars() map[string]any {
	return map[string]any{
		"inWaitingRoom":          d.InWaitingRoom,
		"waitTimeKnown":          d.WaitTimeKnown,
		"waitTime":               d.WaitTime,
		"waitTimeHours":          d.WaitTimeHours,
		"waitTimeHourMinutes":    d.WaitTimeHourMinutes,
		"waitTime25Percentile":   d.WaitTime25Percentile,
		"waitTime50Percentile":   d.WaitTime50Percentile,
		"waitTime75Percentile":   d.WaitTime75Percentile,
		"waitTimeFormatted":      d.WaitTimeFormatted,
		"queueIsFull":            d.QueueIsFull,
		"queueAll":               d.QueueAll,
		"lastUpdated":            d.LastUpdated,
		"refreshIntervalSeconds": d.RefreshIntervalSeconds,
		"queueingMethod":         d.QueueingMethod,
		"isFIFOQueue":            d.IsFIFOQueue,
		"isRandomQueue":          d.IsRandomQueue,
		"isPassthroughQueue":     d.IsPassthroughQueue,
		"isRejectQueue":          d.IsRejectQueue,

		"isEventActive":                d.IsEventActive,
		"isEventPrequeueing":           d.IsEventPrequeueing,
		"timeUntilEventStart":          d.TimeUntilEventStart,
		"timeUntilEventStartFormatted": d.TimeUntilEventStartFormatted,
		"timeUntilEventEnd":            d.TimeUntilEventEnd,
		"timeUntilEventEndFormatted":   d.TimeUntilEventEndFormatted,
		"shuffleAtEventStart":          d.ShuffleAtEventStart,

		"positionInLine":        d.PositionInLine,
		"queueLength":           d.QueueLength,
		"chancePerRefreshOneIn": d.ChancePerRefreshOneIn,
		"lotteryIdentity":       d.LotteryIdentity,
		"lotteryCommitment":     d.LotteryCommitment,
		"lotteryInterval":       d.LotteryInterval,
		"lotteryOdds":           jsonFloat(d.LotteryOdds),
		"lotteryShuffled":       d.LotteryShuffled,
		"lotteryRecords":        d.LotteryRecords,

		"challenge":        d.Challenge,
		"challengePuzzle":  d.ChallengePuzzle,
		"challengeSiteKey": d.ChallengeSiteKey,
		"turnstile":        d.ChallengeWidget,
		"liveScript":       LiveScript(d),
	}
}

// jsonFloat is a number a template shows as the JSON shows it (0.00001,
// not fmt's 1e-05), so that the page reads as its JSON does and as the
// live script writes it: the exact value, the shortest that reads back
// the same.
type jsonFloat float64

// String writes f as encoding/json does.
func (f jsonFloat) String() string {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64) // no JSON number
	}
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		s := strconv.FormatFloat(v, 'e', -1, 64)
		if n := len(s); n >= 4 && s[n-4] == 'e' && s[n-3] == '-' && s[n-2] == '0' {
			s = s[:n-2] + s[n-1:] // e-07 as e-7
		}
		return s
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Template is a parsed waiting page. It is immutable and safe for concurrent
// use by many goroutines.
type Template struct {
	m       *mustache.Template
	unknown []UnknownVariable
}

// maxNesting bounds how deeply sections may nest. Rendering copies the
// context chain once per level, so work grows with the square of the depth;
// real pages nest a handful of levels.
const maxNesting = 100

// noPartials makes every partial empty, so a template never reads files.
// Parse rejects partials before they could be rendered anyway.
var noPartials = &mustache.StaticProvider{}

// Parse parses a Mustache template. It returns an error, prefixed
// "waitingroom/template: " and wrapping the Mustache parser's error where
// there is one, for a template that does not parse, that uses partials
// ({{> name}}) or that nests sections more than 100 levels deep; and one
// wrapping ErrUnknownVariable for a template that uses a name no page
// fills, in a variable, a section or an inverted section, which would
// render empty (or hide the section) without a word. That error names
// every such tag with its line and the closest known variable:
//
//	waitingroom/template: unknown variable: {{waitTimeMinutes}} on line 3 (did you mean waitTime?)
//
// The names accepted are Variables, "." and the default page's texts
// (wr_...). Every variable of the commercial product's reference is among
// them, so that a template written for it parses. ParseAllowUnknown
// parses a template with unknown names.
func Parse(src string) (*Template, error) {
	t, err := ParseAllowUnknown(src)
	if err != nil {
		return nil, err
	}
	if len(t.unknown) > 0 {
		names := make([]string, len(t.unknown))
		for i, u := range t.unknown {
			names[i] = u.String()
		}
		return nil, fmt.Errorf("waitingroom/template: %w: %s", ErrUnknownVariable, strings.Join(names, "; "))
	}
	return t, nil
}

// ParseAllowUnknown is Parse, but a name no page fills is no error: it
// renders empty, as Mustache has it, and Unknown lists it. It suits a
// template written for another release, which may fill variables this one
// does not.
func ParseAllowUnknown(src string) (*Template, error) {
	m, err := mustache.ParseStringPartials(src, noPartials)
	if err != nil {
		return nil, fmt.Errorf("waitingroom/template: %w", err)
	}
	if err := checkTags(m.Tags(), 1); err != nil {
		return nil, fmt.Errorf("waitingroom/template: %w", err)
	}
	return &Template{m: m, unknown: unknownNames(src, m.Tags())}, nil
}

// Unknown returns the names t uses that no page fills, the first use of
// each in the order of the template: none for a template Parse returned.
// The caller must not change the slice.
func (t *Template) Unknown() []UnknownVariable {
	return t.unknown
}

var (
	errPartial = errors.New("partials ({{> name}}) are not supported")
	errNesting = fmt.Errorf("sections nested more than %d levels deep", maxNesting)
)

func checkTags(tags []mustache.Tag, depth int) error {
	for _, t := range tags {
		switch t.Type() {
		case mustache.Partial:
			return errPartial
		case mustache.Section, mustache.InvertedSection:
			if depth > maxNesting {
				return errNesting
			}
			if err := checkTags(t.Tags(), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

//go:embed default.html
var defaultHTML string

var defaultTemplate = sync.OnceValue(func() *Template {
	t, err := Parse(defaultHTML)
	if err != nil {
		panic(err) // the embedded page is tested; this cannot happen
	}
	return t
})

// Default returns the embedded default page. It shows the wait for FIFO and
// random queueing, an unknown wait, a full queue, a room that admits no one
// (queueAll), a closed site (reject) and a scheduled event's pre-queue and
// end, in the language passed to Render, right to left where the language
// is. Where admission is a draw (lotteryIdentity), a section closed by
// default ("Check the draw") shows the visitor's identity in it, the
// commitment to the seed in force, with lotteryInterval the interval and
// its odds, and with lotteryRecords a link to the published record, and
// says how to check the draw once the seed is revealed.
// Every call returns the same *Template.
func Default() *Template {
	return defaultTemplate()
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Render executes t with d and writes the page to w in a single Write; when
// Render fails before writing, nothing has been written. A nil d renders as
// the zero Data.
//
// lang is a BCP 47 language tag (such as "en", "en-GB" or "pt-BR")
// selecting the default page's texts, resolved as in Supported; an unknown
// or empty tag falls back to English. The page carries the language and its
// direction in <html lang dir>. Custom templates ignore lang.
//
// Render is safe for concurrent use.
func (t *Template) Render(w io.Writer, d *Data, lang string) error {
	if d == nil {
		d = &Data{}
	}
	l := lookupLang(lang)
	texts := l.textsFor(d.RefreshIntervalSeconds)
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= 1<<20 {
			bufPool.Put(buf)
		}
	}()
	vars := d.vars()
	vars[lastUpdatedTime] = l.formatClock(d.LastUpdated)
	if err := t.m.FRender(buf, vars, texts); err != nil {
		return fmt.Errorf("waitingroom/template: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}
