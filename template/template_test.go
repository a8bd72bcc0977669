package template

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/cbroglie/mustache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const lastUpdated = "2020-08-03T23:46:00.000Z"

func fifoData() *Data {
	return &Data{
		InWaitingRoom:          true,
		WaitTimeKnown:          true,
		WaitTime:               10,
		WaitTimeHours:          0,
		WaitTimeHourMinutes:    10,
		WaitTimeFormatted:      "10 minutes",
		LastUpdated:            lastUpdated,
		RefreshIntervalSeconds: 20,
		QueueingMethod:         "fifo",
		IsFIFOQueue:            true,
	}
}

func randomData() *Data {
	return &Data{
		InWaitingRoom:          true,
		WaitTimeKnown:          true,
		WaitTime:               10,
		WaitTimeHourMinutes:    10,
		WaitTime25Percentile:   5,
		WaitTime50Percentile:   10,
		WaitTime75Percentile:   15,
		WaitTimeFormatted:      "5 minutes to 15 minutes",
		LastUpdated:            lastUpdated,
		RefreshIntervalSeconds: 30,
		QueueingMethod:         "random",
		IsRandomQueue:          true,
	}
}

func with(d *Data, f func(*Data)) *Data {
	f(d)
	return d
}

func render(t testing.TB, tmpl *Template, d *Data, lang string) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, tmpl.Render(&b, d, lang))
	return b.String()
}

const (
	refreshMeta20 = `<meta http-equiv="refresh" content="20">`
	keepOpen      = "Keep this page open."
	lastUpdatedEl = `Last updated: <time datetime="2020-08-03T23:46:00.000Z" dir="ltr" data-wr-time="lastUpdated">11:46 PM UTC</time>`
)

// unshown matches what a visitor without JavaScript does not see: the live
// page's lines (<template>), scripts and hidden paragraphs.
var unshown = regexp.MustCompile(`(?s)<template[^>]*>.*?</template>|<script[^>]*>.*?</script>|<p[^>]* hidden>.*?</p>`)

// shown is page as a visitor without JavaScript sees it.
func shown(page string) string { return unshown.ReplaceAllString(page, "") }

func TestDefaultStates(t *testing.T) {
	tests := []struct {
		name    string
		data    *Data
		lang    string
		want    []string
		notWant []string
		refresh bool // the page reloads itself (meta refresh and note)
	}{
		{
			name: "fifo known wait",
			data: fifoData(),
			lang: "en",
			want: []string{
				"<title>Waiting room</title>",
				"<h1>Thank you for waiting</h1>",
				"Your estimated wait time is about <strong>10 minutes</strong>.",
				refreshMeta20,
				"This page refreshes itself every 20 seconds.",
				keepOpen,
			},
			notWant: []string{"at random", "cannot estimate", "is full", "not admitting", "site is closed"},
			refresh: true,
		},
		{
			name: "random range",
			data: randomData(),
			lang: "en",
			want: []string{
				"Your estimated wait time is <strong>5 minutes to 15 minutes</strong>.",
				"Visitors are let in at random, not in order of arrival.",
				"Staying on this page keeps your chance of getting in.",
				`<meta http-equiv="refresh" content="30">`,
				"This page refreshes itself every 30 seconds.",
				keepOpen,
			},
			notWant: []string{"wait time is about", "cannot estimate", "not admitting"},
			refresh: true,
		},
		{
			name: "random unknown wait",
			data: with(randomData(), func(d *Data) { d.WaitTimeKnown = false }),
			want: []string{
				"We cannot estimate your wait time right now.",
				"Visitors are let in at random",
				keepOpen,
			},
			notWant: []string{"estimated wait time is", "5 minutes to 15 minutes"},
			refresh: true,
		},
		{
			name: "unknown wait",
			data: with(fifoData(), func(d *Data) { d.WaitTimeKnown = false; d.WaitTimeFormatted = "" }),
			want: []string{
				"We cannot estimate your wait time right now.",
				refreshMeta20,
				keepOpen,
			},
			notWant: []string{"estimated wait time is", "at random", "not admitting"},
			refresh: true,
		},
		{
			name:    "known wait without text counts as unknown",
			data:    with(fifoData(), func(d *Data) { d.WaitTimeFormatted = "  " }),
			want:    []string{"We cannot estimate your wait time right now."},
			notWant: []string{"estimated wait time is", "<strong>"},
			refresh: true,
		},
		{
			name: "queue full",
			data: with(fifoData(), func(d *Data) { d.QueueIsFull = true }),
			want: []string{
				"The waiting room is full at the moment, so no one new can join the queue yet.",
				"Your estimated wait time is about <strong>10 minutes</strong>.",
				refreshMeta20,
				keepOpen,
			},
			notWant: []string{"not admitting", "site is closed"},
			refresh: true,
		},
		{
			name: "queue all",
			data: with(fifoData(), func(d *Data) {
				d.QueueAll = true
				d.WaitTimeKnown = false
				d.WaitTimeFormatted = ""
			}),
			want: []string{
				"The site is not admitting anyone at the moment.",
				keepOpen,
				refreshMeta20,
			},
			notWant: []string{"estimated wait", "cannot estimate", "very busy", "is full"},
			refresh: true,
		},
		{
			name: "queue all hides a known wait",
			data: with(randomData(), func(d *Data) { d.QueueAll = true }),
			want: []string{"The site is not admitting anyone at the moment.", keepOpen},
			notWant: []string{
				"estimated wait", "5 minutes to 15 minutes", "at random",
			},
			refresh: true,
		},
		{
			name: "reject",
			data: with(fifoData(), func(d *Data) {
				d.QueueingMethod = "reject"
				d.IsFIFOQueue = false
				d.IsRejectQueue = true
				d.WaitTimeKnown = false
				d.WaitTimeFormatted = ""
			}),
			want: []string{
				"<title>This site is closed</title>",
				"<h1>This site is closed</h1>",
				"The site is not accepting visitors at the moment. Please try again later.",
			},
			notWant: []string{"Keep this page open", "keep this page open", "estimated wait", "cannot estimate", "Thank you for waiting", `class="progress"`},
			refresh: false,
		},
		{
			name:    "one second interval is singular",
			data:    with(fifoData(), func(d *Data) { d.RefreshIntervalSeconds = 1 }),
			want:    []string{`<meta http-equiv="refresh" content="1">`, "This page refreshes itself every 1 second."},
			notWant: []string{"every 1 seconds"},
			refresh: true,
		},
		{
			name: "fifo wait under a minute: no \"about\"",
			data: with(fifoData(), func(d *Data) {
				d.WaitTime, d.WaitTimeHourMinutes, d.WaitTimeFormatted = 0, 0, "less than a minute"
			}),
			want:    []string{"<p class=\"wait\">Your estimated wait time is less than a minute.</p>", keepOpen},
			notWant: []string{"about", "<strong>less than a minute</strong>"},
			refresh: true,
		},
		{
			name:    "zero interval does not reload",
			data:    with(fifoData(), func(d *Data) { d.RefreshIntervalSeconds = 0 }),
			want:    []string{"Your estimated wait time is about", keepOpen},
			refresh: false,
		},
		{
			name: "hostile values are escaped",
			data: with(fifoData(), func(d *Data) {
				d.WaitTimeFormatted = `<script>alert(1)</script>`
				d.LastUpdated = `"><img src=x onerror=alert(1)>`
			}),
			want: []string{
				"<strong>&lt;script&gt;alert(1)&lt;/script&gt;</strong>",
				`<time datetime="&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" dir="ltr" data-wr-time="lastUpdated">`,
			},
			notWant: []string{"<script", "<img"},
			refresh: true,
		},
		{
			name: "event pre-queue with shuffle",
			data: with(fifoData(), func(d *Data) {
				d.WaitTimeKnown, d.WaitTimeFormatted = false, ""
				d.IsEventPrequeueing, d.ShuffleAtEventStart = true, true
				d.TimeUntilEventStart, d.TimeUntilEventStartFormatted = 125, "2 hours 5 minutes"
			}),
			want: []string{
				`<p data-wr-if="isEventPrequeueing">The event has not started yet, but you are already in the queue.</p>`,
				"The event starts in <strong>2 hours 5 minutes</strong>.",
				"When the event starts, everyone who joined the queue before then will be given a random place in line.",
				keepOpen,
			},
			notWant: []string{"very busy", "cannot estimate", "estimated wait", "will start soon", "not admitting"},
			refresh: true,
		},
		{
			name: "event pre-queue without a start time",
			data: with(fifoData(), func(d *Data) { d.IsEventPrequeueing = true; d.QueueAll = true }),
			want: []string{
				"The event has not started yet",
				"<p class=\"wait\">The event will start soon.</p>",
				keepOpen,
			},
			notWant: []string{"random place", "estimated wait", "not admitting", "starts in"},
			refresh: true,
		},
		{
			name: "running event with a known end",
			data: with(randomData(), func(d *Data) {
				d.IsEventActive = true
				d.TimeUntilEventEnd, d.TimeUntilEventEndFormatted = 60, "1 hour"
				d.ShuffleAtEventStart = true
			}),
			want: []string{
				"Your estimated wait time is <strong>5 minutes to 15 minutes</strong>.",
				"<p>The event ends in <strong>1 hour</strong>.</p>",
				"very busy",
			},
			notWant: []string{"has not started", "random place", "starts in"},
			refresh: true,
		},
		{
			name:    "running event with no end shown",
			data:    with(fifoData(), func(d *Data) { d.IsEventActive = true; d.TimeUntilEventEnd = 30 }),
			want:    []string{"Your estimated wait time is about <strong>10 minutes</strong>."},
			notWant: []string{"event ends", "has not started"},
			refresh: true,
		},
		{
			name:    "unknown language falls back to English",
			data:    fifoData(),
			lang:    "zz-Latn",
			want:    []string{`<html lang="en" dir="ltr">`, "Your estimated wait time is about"},
			refresh: true,
		},
		{
			name:    "regional tag uses its language",
			data:    fifoData(),
			lang:    "EN_gb",
			want:    []string{`<html lang="en" dir="ltr">`},
			refresh: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := render(t, Default(), tt.data, tt.lang)

			_, body, ok := strings.Cut(shown(page), "</style>") // the CSS is not text
			require.True(t, ok)
			for _, s := range tt.want {
				assert.True(t, strings.Contains(page, s), "want %q in\n%s", s, body)
			}
			for _, s := range tt.notWant {
				assert.False(t, strings.Contains(body, s), "do not want %q in\n%s", s, body)
			}

			// Present in every state.
			assert.True(t, strings.HasPrefix(page, "<!DOCTYPE html>\n<html lang=\"en\" dir=\"ltr\">"), "doctype and html lang")
			assert.Contains(t, page, `<meta charset="utf-8">`)
			assert.Contains(t, page, `<meta name="viewport" content="width=device-width,initial-scale=1">`)
			assert.Contains(t, page, `role="status" aria-live="polite"`)
			if tt.data.LastUpdated == lastUpdated {
				assert.Equal(t, 1, strings.Count(page, lastUpdatedEl), "last updated line")
			}
			assert.NotContains(t, shown(page), "{{")
			assert.NotContains(t, shown(page), "}}")

			// Self-contained: one inline script (the live page's), no
			// external assets.
			assert.Equal(t, 1, strings.Count(page, "<script"))
			assert.Contains(t, page, "<script data-refresh=")
			assert.NotContains(t, page, "<script src")
			assert.NotContains(t, page, "<link")
			assert.NotContains(t, page, "http://")
			assert.NotContains(t, page, "https://")
			assert.NotContains(t, page, "url(")

			head, _, ok := strings.Cut(page, "</head>")
			require.True(t, ok)
			if tt.refresh {
				assert.Equal(t, 1, strings.Count(head, `http-equiv="refresh"`), "refresh meta in head")
				assert.Equal(t, 1, strings.Count(page, `http-equiv="refresh"`))
				assert.Contains(t, page, "This page refreshes itself every")
			} else {
				assert.NotContains(t, page, `http-equiv="refresh"`)
				assert.NotContains(t, page, "refreshes itself")
			}
		})
	}
}

func TestDefault(t *testing.T) {
	assert.Same(t, Default(), Default())
	// The embedded page is valid as a custom template, too.
	_, err := Parse(defaultHTML)
	require.NoError(t, err)
}

func TestRenderNilData(t *testing.T) {
	page := render(t, Default(), nil, "")
	assert.Contains(t, page, "We cannot estimate your wait time right now.")
	assert.NotContains(t, page, `http-equiv="refresh"`)

	tmpl, err := Parse("[{{waitTime}}|{{queueingMethod}}|{{isFIFOQueue}}]")
	require.NoError(t, err)
	assert.Equal(t, "[0||false]", render(t, tmpl, nil, "en"))
}

func TestParseError(t *testing.T) {
	nested := func(n int) string {
		return strings.Repeat("{{#queueAll}}", n) + strings.Repeat("{{/queueAll}}", n)
	}
	tests := []struct {
		name    string
		src     string
		parse   bool  // the Mustache parser itself fails
		wantErr error // or this error is wrapped
	}{
		{name: "unclosed section", src: "{{#a}}", parse: true},
		{name: "unclosed inverted section", src: "x {{^queueAll}} y", parse: true},
		{name: "unopened close", src: "{{/a}}", parse: true},
		{name: "interleaved close", src: "{{#a}}{{#b}}{{/a}}{{/b}}", parse: true},
		{name: "unclosed tag", src: "<p>{{waitTime</p>", parse: true},
		{name: "empty tag", src: "{{}}", parse: true},
		{name: "partial", src: "<p>{{> header}}</p>", wantErr: errPartial},
		{name: "partial in section", src: "{{#a}}{{>header}}{{/a}}", wantErr: errPartial},
		{name: "nested too deep", src: nested(maxNesting + 1), wantErr: errNesting},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.src)
			require.Error(t, err)
			assert.Nil(t, tmpl)
			assert.True(t, strings.HasPrefix(err.Error(), "waitingroom/template: "), err.Error())
			if tt.parse {
				var pe mustache.ParseError
				assert.True(t, errors.As(err, &pe), "wraps mustache.ParseError: %v", err)
			} else {
				assert.ErrorIs(t, err, tt.wantErr)
			}
		})
	}

	t.Run("nesting at the limit parses", func(t *testing.T) {
		_, err := Parse(nested(maxNesting))
		require.NoError(t, err)
	})
}

// allVariables prints every documented variable of a template.
const allVariables = `inWaitingRoom={{inWaitingRoom}}
waitTimeKnown={{waitTimeKnown}}
waitTime={{waitTime}}
waitTimeHours={{waitTimeHours}}
waitTimeHourMinutes={{waitTimeHourMinutes}}
waitTime25Percentile={{waitTime25Percentile}}
waitTime50Percentile={{waitTime50Percentile}}
waitTime75Percentile={{waitTime75Percentile}}
waitTimeFormatted={{waitTimeFormatted}}
queueIsFull={{queueIsFull}}
queueAll={{queueAll}}
lastUpdated={{lastUpdated}}
refreshIntervalSeconds={{refreshIntervalSeconds}}
queueingMethod={{queueingMethod}}
isFIFOQueue={{isFIFOQueue}}
isRandomQueue={{isRandomQueue}}
isPassthroughQueue={{isPassthroughQueue}}
isRejectQueue={{isRejectQueue}}
isEventActive={{isEventActive}}
isEventPrequeueing={{isEventPrequeueing}}
timeUntilEventStart={{timeUntilEventStart}}
timeUntilEventStartFormatted={{timeUntilEventStartFormatted}}
timeUntilEventEnd={{timeUntilEventEnd}}
timeUntilEventEndFormatted={{timeUntilEventEndFormatted}}
shuffleAtEventStart={{shuffleAtEventStart}}
positionInLine={{positionInLine}}
queueLength={{queueLength}}
chancePerRefreshOneIn={{chancePerRefreshOneIn}}
lotteryIdentity={{lotteryIdentity}}
lotteryCommitment={{lotteryCommitment}}
lotteryInterval={{lotteryInterval}}
lotteryOdds={{lotteryOdds}}
lotteryShuffled={{lotteryShuffled}}
lotteryRecords={{lotteryRecords}}
challenge={{challenge}}
challengePuzzle={{challengePuzzle}}
challengeSiteKey={{challengeSiteKey}}
turnstile={{{turnstile}}}
`

func TestCustomTemplateVariables(t *testing.T) {
	tmpl, err := Parse(allVariables)
	require.NoError(t, err)

	tests := []struct {
		name string
		data *Data
		want string
	}{
		{
			name: "distinct values",
			data: &Data{
				InWaitingRoom:          true,
				WaitTimeKnown:          false,
				WaitTime:               125,
				WaitTimeHours:          2,
				WaitTimeHourMinutes:    5,
				WaitTime25Percentile:   61,
				WaitTime50Percentile:   125,
				WaitTime75Percentile:   190,
				WaitTimeFormatted:      "1 hour 1 minute to 3 hours 10 minutes",
				QueueIsFull:            true,
				QueueAll:               false,
				LastUpdated:            lastUpdated,
				RefreshIntervalSeconds: 45,
				QueueingMethod:         "passthrough",
				IsFIFOQueue:            false,
				IsRandomQueue:          true,
				IsPassthroughQueue:     false,
				IsRejectQueue:          true,

				IsEventActive:                false,
				IsEventPrequeueing:           true,
				TimeUntilEventStart:          42,
				TimeUntilEventStartFormatted: "42 minutes",
				TimeUntilEventEnd:            0,
				TimeUntilEventEndFormatted:   "",
				ShuffleAtEventStart:          true,

				PositionInLine:        57,
				QueueLength:           90,
				ChancePerRefreshOneIn: 12,
				LotteryIdentity:       "00000000075bcd15",
				LotteryCommitment:     "c0ffee",
				LotteryInterval:       58828440,
				LotteryOdds:           0.25,
				LotteryRecords:        "/lottery?at=1764932400&room=a&b",

				Challenge:        "pow",
				ChallengePuzzle:  "abc.1.16",
				ChallengeSiteKey: "key",
				ChallengeWidget:  "<b>solve</b>",
			},
			want: `inWaitingRoom=true
waitTimeKnown=false
waitTime=125
waitTimeHours=2
waitTimeHourMinutes=5
waitTime25Percentile=61
waitTime50Percentile=125
waitTime75Percentile=190
waitTimeFormatted=1 hour 1 minute to 3 hours 10 minutes
queueIsFull=true
queueAll=false
lastUpdated=2020-08-03T23:46:00.000Z
refreshIntervalSeconds=45
queueingMethod=passthrough
isFIFOQueue=false
isRandomQueue=true
isPassthroughQueue=false
isRejectQueue=true
isEventActive=false
isEventPrequeueing=true
timeUntilEventStart=42
timeUntilEventStartFormatted=42 minutes
timeUntilEventEnd=0
timeUntilEventEndFormatted=
shuffleAtEventStart=true
positionInLine=57
queueLength=90
chancePerRefreshOneIn=12
lotteryIdentity=00000000075bcd15
lotteryCommitment=c0ffee
lotteryInterval=58828440
lotteryOdds=0.25
lotteryShuffled=false
lotteryRecords=/lottery?at=1764932400&amp;room=a&amp;b
challenge=pow
challengePuzzle=abc.1.16
challengeSiteKey=key
turnstile=<b>solve</b>
`,
		},
		{
			name: "the other booleans",
			data: &Data{
				WaitTimeKnown:              true,
				QueueAll:                   true,
				IsFIFOQueue:                true,
				IsPassthroughQueue:         true,
				IsEventActive:              true,
				TimeUntilEventEnd:          90,
				TimeUntilEventEndFormatted: "1 hour 30 minutes",
			},
			want: `inWaitingRoom=false
waitTimeKnown=true
waitTime=0
waitTimeHours=0
waitTimeHourMinutes=0
waitTime25Percentile=0
waitTime50Percentile=0
waitTime75Percentile=0
waitTimeFormatted=
queueIsFull=false
queueAll=true
lastUpdated=
refreshIntervalSeconds=0
queueingMethod=
isFIFOQueue=true
isRandomQueue=false
isPassthroughQueue=true
isRejectQueue=false
isEventActive=true
isEventPrequeueing=false
timeUntilEventStart=0
timeUntilEventStartFormatted=
timeUntilEventEnd=90
timeUntilEventEndFormatted=1 hour 30 minutes
shuffleAtEventStart=false
positionInLine=0
queueLength=0
chancePerRefreshOneIn=0
lotteryIdentity=
lotteryCommitment=
lotteryInterval=0
lotteryOdds=0
lotteryShuffled=false
lotteryRecords=
challenge=
challengePuzzle=
challengeSiteKey=
turnstile=
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, lang := range []string{"en", "", "de"} { // custom templates ignore lang
				assert.Equal(t, tt.want, render(t, tmpl, tt.data, lang))
			}
		})
	}
}

// TestVarsMatchJSON checks that the hand-written Mustache context carries
// every field of Data under its JSON name with its value, and that the
// internal texts cannot shadow any of them.
func TestVarsMatchJSON(t *testing.T) {
	d := randomData()
	d.QueueIsFull, d.QueueAll, d.IsFIFOQueue, d.IsPassthroughQueue, d.IsRejectQueue = true, true, true, true, true
	d.WaitTimeHours = 7
	d.IsEventActive, d.IsEventPrequeueing, d.ShuffleAtEventStart = true, true, true
	d.TimeUntilEventStart, d.TimeUntilEventStartFormatted = 3, "3 minutes"
	d.TimeUntilEventEnd, d.TimeUntilEventEndFormatted = 61, "1 hour 1 minute"
	d.LotteryIdentity, d.LotteryCommitment = "00000000075bcd15", "2ec99663ca71e231324cad1af9df2e0570d0e3401bd18a3e02b1081f8a91de07"
	d.LotteryInterval, d.LotteryOdds, d.LotteryRecords = 58828440, 0.25, "/lottery?at=1764932400"
	vars := d.vars()

	typ := reflect.TypeOf(*d)
	val := reflect.ValueOf(*d)
	require.Equal(t, 39, typ.NumField())
	assert.Len(t, vars, typ.NumField()) // not CookieAttributes, but liveScript
	for i := 0; i < typ.NumField(); i++ {
		if typ.Field(i).Name == "CookieAttributes" {
			continue // for the page's scripts: no variable
		}
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		require.NotEmpty(t, name)
		if name == "-" {
			name = "turnstile" // ChallengeWidget: the product's slot name, not in the JSON
		}
		v, ok := vars[name]
		if f, ok := v.(jsonFloat); ok {
			v = float64(f) // written as the JSON writes it (TestJSONFloat)
		}
		if assert.True(t, ok, "variable %s", name) {
			assert.Equal(t, val.Field(i).Interface(), v, "variable %s", name)
		}
		assert.Contains(t, allVariables, "{{"+name+"}", "allVariables lists %s", name)
	}

	for _, c := range compiled {
		for _, texts := range c.forms {
			if texts == nil {
				continue
			}
			for k := range texts {
				assert.True(t, strings.HasPrefix(k, internalPrefix), k)
				assert.NotContains(t, vars, k)
			}
		}
	}
}

// TestDefaultUsesKnownTexts checks that every internal variable the default
// page uses exists in every language, and that the page uses no variable
// other than those and the documented ones.
func TestDefaultUsesKnownTexts(t *testing.T) {
	vars := (&Data{}).vars()
	var walk func(tags []mustache.Tag)
	used := map[string]bool{}
	walk = func(tags []mustache.Tag) {
		for _, tag := range tags {
			used[tag.Name()] = true
			if tag.Type() == mustache.Section || tag.Type() == mustache.InvertedSection {
				walk(tag.Tags())
			}
		}
	}
	walk(Default().m.Tags())
	for name := range used {
		if _, ok := vars[name]; ok {
			continue
		}
		require.True(t, strings.HasPrefix(name, internalPrefix), "unknown variable %s", name)
		if name == lastUpdatedTime {
			continue // filled by Render, not a text
		}
		for tag, c := range compiled {
			for i, texts := range c.forms {
				if texts != nil {
					assert.Contains(t, texts, name, "language %s form %s", tag, pluralCategory(i))
				}
			}
		}
	}
}

func TestCustomTemplateSections(t *testing.T) {
	tmpl, err := Parse(`{{#isFIFOQueue}}fifo {{waitTime}}{{/isFIFOQueue}}{{#isRandomQueue}}random {{waitTime25Percentile}}-{{waitTime75Percentile}}{{/isRandomQueue}}{{^waitTimeKnown}}unknown{{/waitTimeKnown}}`)
	require.NoError(t, err)
	assert.Equal(t, "fifo 10", render(t, tmpl, fifoData(), ""))
	assert.Equal(t, "random 5-15", render(t, tmpl, randomData(), ""))
	assert.Equal(t, "unknown", render(t, tmpl, &Data{}, ""))
}

func TestCustomTemplateEscapesHTML(t *testing.T) {
	tmpl, err := Parse(`<p title="{{queueingMethod}}">{{waitTimeFormatted}}</p><time datetime='{{lastUpdated}}'></time>`)
	require.NoError(t, err)
	d := &Data{
		WaitTimeFormatted: `</p><script>alert("x")</script>`,
		QueueingMethod:    `" onmouseover="alert(1)`,
		LastUpdated:       `' onfocus='alert(1)`,
	}
	got := render(t, tmpl, d, "")
	assert.Equal(t,
		`<p title="&#34; onmouseover=&#34;alert(1)">&lt;/p&gt;&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;</p>`+
			`<time datetime='&#39; onfocus=&#39;alert(1)'></time>`,
		got)
	assert.NotContains(t, got, "<script")
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

func TestRenderWriteError(t *testing.T) {
	boom := errors.New("boom")
	err := Default().Render(failingWriter{boom}, fifoData(), "en")
	assert.ErrorIs(t, err, boom)
}

type countingWriter struct {
	writes int
	bytes.Buffer
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

func TestRenderWritesOnce(t *testing.T) {
	var w countingWriter
	require.NoError(t, Default().Render(&w, fifoData(), "en"))
	assert.Equal(t, 1, w.writes)
	assert.Equal(t, render(t, Default(), fifoData(), "en"), w.String())
}

func TestRenderConcurrent(t *testing.T) {
	want := render(t, Default(), fifoData(), "en")
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				var b bytes.Buffer
				if assert.NoError(t, Default().Render(&b, fifoData(), "en")) {
					assert.Equal(t, want, b.String())
				}
			}
		}()
	}
	wg.Wait()
}

const (
	acceptChrome  = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"
	acceptFirefox = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/png,image/svg+xml,*/*;q=0.8"
	acceptSafari  = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
)

func TestLanguages(t *testing.T) {
	want := []string{"ar", "de", "en", "es", "fr", "hi", "it", "ja", "ko", "nl", "pl", "pt-BR", "tr", "zh-CN", "zh-TW"}
	assert.Equal(t, want, Languages())
	l := Languages()
	l[0] = "xx"
	assert.Equal(t, want, Languages(), "callers cannot change the table")

	for _, tag := range Languages() {
		m := languages[tag]
		require.NotNil(t, m)
		_, err := compileLang(tag, m)
		assert.NoError(t, err, tag)
		assert.Same(t, compiled[tag], lookupLang(tag), tag)
		assert.True(t, Supported(tag), tag)
	}

	en := compiled["en"]
	for _, tag := range []string{"en", "EN", "en-US", "en_gb", " en ", "", "xx", "-", "_", "*", "e", "english", strings.Repeat("e", 1000), "en\x00"} {
		assert.Same(t, en, lookupLang(tag), "tag %q", tag)
	}
	for tag, want := range map[string]string{
		"zh-Hant-TW": "zh-TW", "zh-HK": "zh-TW", "zh": "zh-CN", "ZH_cn": "zh-CN", "zh-Hans-HK": "zh-CN",
		"pt": "pt-BR", "pt-PT": "pt-BR", "pt_br": "pt-BR", "de-CH": "de", "ar-EG": "ar", "es-419": "es",
		"ja-JP": "ja", "fr-CA-u-ca-gregory": "fr",
	} {
		assert.Same(t, compiled[want], lookupLang(tag), "tag %q", tag)
	}
}

func FuzzWantsJSON(f *testing.F) {
	for _, s := range []string{
		"", "application/json", "application/json, text/html", "*/*",
		"application/json;q=0", "APPLICATION/JSON;Q=0.5", acceptChrome, acceptFirefox, acceptSafari,
		"application/json;;;q", "application/json;q=0.,", ",,;=",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		got := WantsJSON(accept)
		if got {
			head := accept
			if len(head) > maxAcceptBytes {
				head = head[:maxAcceptBytes]
			}
			if !strings.Contains(strings.ToLower(head), "application/json") {
				t.Fatalf("WantsJSON(%q) = true without application/json", accept)
			}
		}
		if got != WantsJSON(accept) {
			t.Fatal("not deterministic")
		}
	})
}

func FuzzRender(f *testing.F) {
	f.Add(allVariables, uint16(0xffff), 10, 30, "10 minutes", lastUpdated, "fifo", "en")
	f.Add(defaultHTML, uint16(0x5555), 90, 20, "5 minutes to 15 minutes", lastUpdated, "random", "de-CH")
	f.Add("{{#waitTimeKnown}}{{waitTime}}{{/waitTimeKnown}}{{^queueAll}}x{{/queueAll}}", uint16(1), -1, 0, "<b>", "", "", "")
	f.Add("{{=<% %>=}}<% waitTime %>{{waitTime}}", uint16(0), 5, 5, "", "", "", "")
	f.Add("{{{waitTimeFormatted}}}{{&lastUpdated}}{{wr.title}}{{.}}{{a.b.c}}", uint16(2), 0, 0, "x", "y", "z", "")
	f.Add("{{#lastUpdated}}{{.}}{{/lastUpdated}}{{#waitTime}}{{.}}{{/waitTime}}{{! comment }}", uint16(3), 1, 1, "", "t", "", "")
	f.Fuzz(func(t *testing.T, src string, flags uint16, wait, refresh int, formatted, updated, method, lang string) {
		d := &Data{
			InWaitingRoom:          flags&(1<<0) != 0,
			WaitTimeKnown:          flags&(1<<1) != 0,
			QueueIsFull:            flags&(1<<2) != 0,
			QueueAll:               flags&(1<<3) != 0,
			IsFIFOQueue:            flags&(1<<4) != 0,
			IsRandomQueue:          flags&(1<<5) != 0,
			IsPassthroughQueue:     flags&(1<<6) != 0,
			IsRejectQueue:          flags&(1<<7) != 0,
			WaitTime:               wait,
			WaitTimeHours:          wait / 60,
			WaitTimeHourMinutes:    wait % 60,
			WaitTime25Percentile:   wait / 2,
			WaitTime50Percentile:   wait,
			WaitTime75Percentile:   wait * 2,
			WaitTimeFormatted:      formatted,
			LastUpdated:            updated,
			RefreshIntervalSeconds: refresh,
			QueueingMethod:         method,

			IsEventActive:                flags&(1<<8) != 0,
			IsEventPrequeueing:           flags&(1<<9) != 0,
			ShuffleAtEventStart:          flags&(1<<10) != 0,
			TimeUntilEventStart:          wait,
			TimeUntilEventStartFormatted: formatted,
			TimeUntilEventEnd:            refresh,
			TimeUntilEventEndFormatted:   updated,
		}

		// The default page with any values.
		var b bytes.Buffer
		if err := Default().Render(&b, d, lang); err != nil {
			t.Fatalf("default page: %v", err)
		}
		if strings.Count(b.String(), "<script") != 1 { // the live page's
			t.Fatal("default page: value injected markup")
		}

		// Escaped variables never carry markup.
		esc, err := Parse("{{waitTimeFormatted}}|{{lastUpdated}}|{{queueingMethod}}|{{timeUntilEventStartFormatted}}|{{timeUntilEventEndFormatted}}")
		if err != nil {
			t.Fatal(err)
		}
		b.Reset()
		if err := esc.Render(&b, d, lang); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(b.String(), `<>"'`) {
			t.Fatalf("unescaped output %q", b.String())
		}

		// Any template.
		tmpl, err := Parse(src)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "waitingroom/template: ") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		_ = tmpl.Render(io.Discard, d, lang)
	})
}

func BenchmarkRenderDefault(b *testing.B) {
	d := fifoData()
	tmpl := Default()
	b.ReportAllocs()
	for b.Loop() {
		if err := tmpl.Render(io.Discard, d, "en"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWantsJSON(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		WantsJSON(acceptChrome)
	}
}

func TestChallengeScriptCookie(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		want         []string
		notWant      []string
	}{
		{
			name:    "the room's attributes",
			script:  ChallengeScriptFor("p.1.8", "", "__wr_challenge", "; Path=/; Secure; SameSite=None; Partitioned", 20),
			want:    []string{`c="__wr_challenge",a="; Path=/; Secure; SameSite=None; Partitioned",r=20;`, `document.cookie=c+"="+v+a+"; Max-Age=600"`},
			notWant: []string{"Lax", "location.protocol"},
		},
		{
			name:   "Lax, Secure over HTTPS",
			script: ChallengeScript("p.1.8", "", "__wr_challenge", "/shop", 20),
			want:   []string{`c="__wr_challenge",a="; Path=/shop; SameSite=Lax"+(location.protocol==="https:"?"; Secure":""),r=20;`},
		},
		{
			name:   "no closing tag from the values",
			script: ChallengeScriptFor("p.1.8", "", "</script>", "; Path=/</script>", 20),
			want:   []string{`\u003c/script\u003e`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, w := range tc.want {
				assert.Contains(t, tc.script, w)
			}
			for _, w := range tc.notWant {
				assert.NotContains(t, tc.script, w)
			}
			assert.Equal(t, 1, strings.Count(tc.script, "</script>"))
		})
	}
}
