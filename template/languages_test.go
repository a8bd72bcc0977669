package template

import (
	"html"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pageState is one state of the default page, filled in for a language.
type pageState struct {
	name string
	data func(lang string) *Data
	// want and notWant name internal texts (without internalPrefix) the page
	// shows or does not show; sentences holding a value are checked apart.
	want, notWant []string
	// sentence is the internal text holding a value ("waitFIFO" for
	// waitFIFOBefore, the value, waitFIFOAfter) and value the Data field
	// it shows.
	sentence string
	value    func(d *Data) string
}

var pageStates = []pageState{
	{
		name:     "fifo",
		data:     func(lang string) *Data { return localized(fifoData(), lang) },
		want:     []string{"title", "heading", "intro", "keepOpen"},
		notWant:  []string{"randomNote", "waitUnknown", "queueFull", "queueAll", "closedText", "eventIntro", "eventShuffle", "eventStartsSoon", "positionBefore", "chanceBefore"},
		sentence: "waitFIFO",
		value:    func(d *Data) string { return d.WaitTimeFormatted },
	},
	{
		name: "fifo, under a minute",
		data: func(lang string) *Data {
			return with(fifoData(), func(d *Data) {
				d.WaitTime, d.WaitTimeHourMinutes = 0, 0
				localized(d, lang)
			})
		},
		want:    []string{"title", "heading", "intro", "waitSoon", "keepOpen"},
		notWant: []string{"waitUnknown", "randomNote"},
	},
	{
		name:     "random",
		data:     func(lang string) *Data { return localized(randomData(), lang) },
		want:     []string{"title", "heading", "intro", "randomNote", "keepOpen"},
		notWant:  []string{"waitUnknown", "queueAll", "closedText", "eventIntro", "drawCheck", "drawIdentity", "drawRecords", "drawNoteBefore"},
		sentence: "waitRandom",
		value:    func(d *Data) string { return d.WaitTimeFormatted },
	},
	{
		name:     "random, a draw",
		data:     func(lang string) *Data { return localized(drawData(), lang) },
		want:     []string{"randomNote", "keepOpen", "drawCheck", "drawIdentity", "drawCommitment", "drawInterval", "drawOdds", "drawCut", "drawRecords", "drawNoteBefore", "drawNoteAfter"},
		notWant:  []string{"waitUnknown", "queueAll"},
		sentence: "waitRandom",
		value:    func(d *Data) string { return d.WaitTimeFormatted },
	},
	{
		name: "fifo, position in line",
		data: func(lang string) *Data {
			return with(localized(fifoData(), lang), func(d *Data) { d.PositionInLine = 57 })
		},
		want:     []string{"heading", "intro", "waitFIFOBefore", "keepOpen"},
		notWant:  []string{"randomNote", "chanceBefore", "waitUnknown"},
		sentence: "position",
		value:    func(d *Data) string { return strconv.Itoa(d.PositionInLine) },
	},
	{
		name: "random, chance per refresh",
		data: func(lang string) *Data {
			return with(localized(randomData(), lang), func(d *Data) { d.ChancePerRefreshOneIn = 12 })
		},
		want:     []string{"heading", "intro", "waitRandomBefore", "randomNote", "keepOpen"},
		notWant:  []string{"positionBefore", "waitUnknown"},
		sentence: "chance",
		value:    func(d *Data) string { return strconv.Itoa(d.ChancePerRefreshOneIn) },
	},
	{
		name: "random unknown",
		data: func(lang string) *Data {
			return with(localized(randomData(), lang), func(d *Data) { d.WaitTimeKnown = false })
		},
		want:    []string{"waitUnknown", "randomNote", "keepOpen"},
		notWant: []string{"queueAll", "closedText", "eventIntro"},
	},
	{
		name: "unknown",
		data: func(lang string) *Data {
			return with(fifoData(), func(d *Data) { d.WaitTimeKnown = false; d.WaitTimeFormatted = "" })
		},
		want:    []string{"heading", "intro", "waitUnknown", "keepOpen"},
		notWant: []string{"randomNote", "queueFull", "queueAll", "closedText"},
	},
	{
		name: "queue full",
		data: func(lang string) *Data {
			return with(localized(fifoData(), lang), func(d *Data) { d.QueueIsFull = true })
		},
		want:     []string{"heading", "intro", "queueFull", "keepOpen"},
		notWant:  []string{"waitUnknown", "queueAll", "closedText"},
		sentence: "waitFIFO",
		value:    func(d *Data) string { return d.WaitTimeFormatted },
	},
	{
		name: "queue all",
		data: func(lang string) *Data {
			return with(localized(randomData(), lang), func(d *Data) { d.QueueAll = true })
		},
		want:    []string{"heading", "queueAll", "keepOpen"},
		notWant: []string{"intro", "waitUnknown", "randomNote", "queueFull", "closedText", "waitRandomBefore"},
	},
	{
		name: "reject",
		data: func(lang string) *Data {
			return with(fifoData(), func(d *Data) {
				d.QueueingMethod, d.IsFIFOQueue, d.IsRejectQueue = "reject", false, true
				d.WaitTimeKnown, d.WaitTimeFormatted = false, ""
			})
		},
		want:    []string{"closedTitle", "closedText"},
		notWant: []string{"title", "heading", "intro", "keepOpen", "waitUnknown", "refreshBefore"},
	},
	{
		name: "event pre-queue",
		data: func(lang string) *Data {
			return with(localized(fifoData(), lang), func(d *Data) {
				d.WaitTimeKnown, d.WaitTimeFormatted = false, ""
				d.IsEventPrequeueing, d.ShuffleAtEventStart = true, true
				d.TimeUntilEventStart, d.TimeUntilEventStartFormatted = 90, FormatWait(lang, 90)
			})
		},
		want:     []string{"heading", "eventIntro", "eventShuffle", "keepOpen"},
		notWant:  []string{"intro", "waitUnknown", "eventStartsSoon", "queueAll", "closedText"},
		sentence: "eventStarts",
		value:    func(d *Data) string { return d.TimeUntilEventStartFormatted },
	},
	{
		name: "event pre-queue without a time or shuffle",
		data: func(lang string) *Data {
			return with(localized(fifoData(), lang), func(d *Data) {
				d.IsEventPrequeueing = true
				d.QueueIsFull = true
				d.QueueAll = true
			})
		},
		want:    []string{"eventIntro", "eventStartsSoon", "queueFull", "keepOpen"},
		notWant: []string{"intro", "eventShuffle", "queueAll", "waitFIFOBefore", "waitUnknown"},
	},
	{
		name: "event running",
		data: func(lang string) *Data {
			return with(localized(fifoData(), lang), func(d *Data) {
				d.IsEventActive = true
				d.TimeUntilEventEnd, d.TimeUntilEventEndFormatted = 125, FormatWait(lang, 125)
				d.ShuffleAtEventStart = true // past: not shown
			})
		},
		want:     []string{"heading", "intro", "waitFIFOBefore", "keepOpen"},
		notWant:  []string{"eventIntro", "eventShuffle", "eventStartsSoon", "waitUnknown"},
		sentence: "eventEnds",
		value:    func(d *Data) string { return d.TimeUntilEventEndFormatted },
	},
}

// localized replaces the English wait of d with one in lang.
func localized(d *Data, lang string) *Data {
	if d.IsRandomQueue {
		d.WaitTimeFormatted = FormatWaitRange(lang, d.WaitTime25Percentile, d.WaitTime75Percentile)
	} else {
		d.WaitTimeFormatted = FormatWait(lang, d.WaitTime)
	}
	return d
}

// englishSentences are the English texts of the default page, and the
// parts of those holding a value, that a page in another language must not
// show.
func englishSentences() []string {
	var out []string
	for k, v := range compiled["en"].textsFor(20) {
		v = strings.TrimSpace(v)
		if k == internalPrefix+"lang" || k == internalPrefix+"dir" || len(v) < 8 {
			continue
		}
		out = append(out, html.EscapeString(v))
	}
	return append(out, "Thank you for waiting", "Keep this page open", "Your estimated wait", "Last updated",
		"minutes to", "less than a minute", "The event")
}

func TestDefaultEveryLanguage(t *testing.T) {
	english := englishSentences()
	require.NotEmpty(t, english)
	for _, lang := range Languages() {
		m := languages[lang]
		for _, st := range pageStates {
			t.Run(lang+"/"+st.name, func(t *testing.T) {
				d := st.data(lang)
				page := render(t, Default(), d, lang)
				head, rest, ok := strings.Cut(shown(page), "<style>")
				require.True(t, ok)
				_, rest, ok = strings.Cut(rest, "</style>")
				require.True(t, ok)
				body := head + rest // all but the CSS
				texts := lookupLang(lang).textsFor(d.RefreshIntervalSeconds)
				text := func(key string) string { return html.EscapeString(texts[internalPrefix+key]) }

				assert.True(t, strings.HasPrefix(page, `<!DOCTYPE html>`+"\n"+`<html lang="`+lang+`" dir="`+m.Dir+`">`), "html lang and dir")
				for _, k := range st.want {
					assert.Contains(t, body, text(k), k)
				}
				for _, k := range st.notWant {
					assert.NotContains(t, body, text(k), k)
				}
				if st.sentence != "" {
					v := st.value(d)
					require.NotEmpty(t, v)
					assert.Contains(t, body, text(st.sentence+"Before")+"<strong>"+html.EscapeString(v)+"</strong>"+text(st.sentence+"After"))
				}
				if d.LastUpdated != "" {
					assert.Contains(t, body, text("lastUpdatedBefore")+`<time datetime="`+d.LastUpdated+`" dir="ltr" data-wr-time="lastUpdated">`)
				}
				if !d.IsRejectQueue {
					assert.Contains(t, body, refreshNote(lang, d.RefreshIntervalSeconds))
				}
				assert.NotContains(t, body, "{")
				assert.NotContains(t, body, "}")
				if lang != "en" {
					for _, s := range english {
						assert.NotContains(t, body, s, "English left on the %s page", lang)
					}
				}
			})
		}
	}
}

// refreshNote is the refresh sentence of lang for n seconds as the page
// shows it.
func refreshNote(lang string, n int) string {
	texts := lookupLang(lang).textsFor(n)
	count := ""
	if texts[internalPrefix+"refreshCount"] != "" {
		count = strconv.Itoa(n)
	}
	return "<p>" + html.EscapeString(texts[internalPrefix+"refreshBefore"]) + count +
		html.EscapeString(texts[internalPrefix+"refreshAfter"]) + "</p>"
}

func TestRefreshPlurals(t *testing.T) {
	tests := []struct {
		lang string
		n    int
		want string
	}{
		{"en", 1, "This page refreshes itself every 1 second."},
		{"en", 2, "This page refreshes itself every 2 seconds."},
		{"de", 1, "Diese Seite wird jede Sekunde automatisch aktualisiert."},
		{"de", 30, "Diese Seite wird alle 30 Sekunden automatisch aktualisiert."},
		{"fr", 1, "Cette page s’actualise automatiquement chaque seconde."},
		{"fr", 20, "Cette page s’actualise automatiquement toutes les 20 secondes."},
		{"pl", 1, "Ta strona odświeża się automatycznie co sekundę."},
		{"pl", 2, "Ta strona odświeża się automatycznie co 2 sekundy."},
		{"pl", 5, "Ta strona odświeża się automatycznie co 5 sekund."},
		{"pl", 12, "Ta strona odświeża się automatycznie co 12 sekund."},
		{"pl", 22, "Ta strona odświeża się automatycznie co 22 sekundy."},
		{"pl", 25, "Ta strona odświeża się automatycznie co 25 sekund."},
		{"ar", 1, "تُحدَّث هذه الصفحة تلقائيًا كل ثانية."},
		{"ar", 2, "تُحدَّث هذه الصفحة تلقائيًا كل ثانيتين."},
		{"ar", 5, "تُحدَّث هذه الصفحة تلقائيًا كل 5 ثوانٍ."},
		{"ar", 30, "تُحدَّث هذه الصفحة تلقائيًا كل 30 ثانية."},
		{"ar", 100, "تُحدَّث هذه الصفحة تلقائيًا كل 100 ثانية."},
		{"ja", 1, "このページは1秒ごとに自動で更新されます。"},
		{"ja", 20, "このページは20秒ごとに自動で更新されます。"},
		{"pt-BR", 1, "Esta página é atualizada automaticamente a cada 1 segundo."},
		{"hi", 20, "यह पेज हर 20 सेकंड में अपने-आप रीफ़्रेश होता है।"},
		{"tr", 20, "Bu sayfa her 20 saniyede bir otomatik olarak yenilenir."},
	}
	for _, tt := range tests {
		t.Run(tt.lang+"/"+strconv.Itoa(tt.n), func(t *testing.T) {
			d := with(fifoData(), func(d *Data) { d.RefreshIntervalSeconds = tt.n })
			page := render(t, Default(), d, tt.lang)
			assert.Contains(t, page, "<p>"+tt.want+"</p>")
			assert.Contains(t, page, `<meta http-equiv="refresh" content="`+strconv.Itoa(tt.n)+`">`)
		})
	}
}

// TestTranslated checks that every text of the default page is translated:
// no language repeats an English text, and none leaves stray spaces.
func TestTranslated(t *testing.T) {
	en := reflect.ValueOf(*languages["en"])
	typ := en.Type()
	for _, lang := range Languages() {
		v := reflect.ValueOf(*languages[lang])
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			var texts, english []string
			switch f.Type {
			case reflect.TypeOf(""):
				texts, english = []string{v.Field(i).String()}, []string{en.Field(i).String()}
			case reflect.TypeOf(plurals{}):
				p, e := v.Field(i).Interface().(plurals), en.Field(i).Interface().(plurals)
				texts, english = p[:], e[:]
			default:
				continue
			}
			for j, s := range texts {
				assert.Equal(t, strings.TrimSpace(s), s, "%s %s: stray space", lang, f.Name)
				switch f.Name {
				case "Dir", "HoursMinutes", "Range", "Minutes", "RangeLessThanMinute", "RangeMinutes", "RangeHours":
					continue // alike in several languages ("{h} {m}", French "minutes")
				}
				if lang != "en" && s != "" {
					assert.NotEqual(t, english[min(j, len(english)-1)], s, "%s %s untranslated", lang, f.Name)
				}
			}
		}
	}
}

func TestDefaultRightToLeft(t *testing.T) {
	page := render(t, Default(), localized(randomData(), "ar"), "ar")
	assert.True(t, strings.HasPrefix(page, "<!DOCTYPE html>\n<html lang=\"ar\" dir=\"rtl\">"))
	assert.Contains(t, page, "<strong>من 5 دقائق إلى 15 دقيقة</strong>")

	// The layout uses logical properties only, so it mirrors with dir.
	css, _, ok := strings.Cut(defaultHTML, "</style>")
	require.True(t, ok)
	for _, physical := range []string{"left", "right"} {
		assert.NotContains(t, css, physical)
	}
	assert.Contains(t, css, "border-inline-start")
	assert.Contains(t, css, `[dir="rtl"] .progress::before`)

	for tag, want := range map[string]string{"pt": "pt-BR", "zh-Hant": "zh-TW", "zh": "zh-CN", "de-AT": "de", "xx": "en"} {
		page := render(t, Default(), fifoData(), tag)
		assert.True(t, strings.HasPrefix(page, "<!DOCTYPE html>\n<html lang=\""+want+"\" dir=\"ltr\">"), tag)
	}
}

// Without JavaScript the default page shows the time of the last update
// as the time of day in UTC, in the language's usual form; the <time>
// element keeps the instant for the live script.
func TestLastUpdatedClock(t *testing.T) {
	const late, early = "2026-12-03T23:38:18.000Z", "2026-12-04T00:05:00.000Z"
	tests := []struct {
		lang        string
		late, early string
	}{
		{lang: "en", late: "11:38 PM UTC", early: "12:05 AM UTC"},
		{lang: "en-GB", late: "11:38 PM UTC", early: "12:05 AM UTC"},
		{lang: "hi", late: "11:38 pm UTC", early: "12:05 am UTC"},
		{lang: "es", late: "23:38 UTC", early: "00:05 UTC"},
		{lang: "de", late: "23:38 UTC", early: "00:05 UTC"},
		{lang: "fr", late: "23:38 UTC", early: "00:05 UTC"},
		{lang: "it", late: "23:38 UTC", early: "00:05 UTC"},
		{lang: "pt-BR", late: "23:38 UTC", early: "00:05 UTC"},
		{lang: "nl", late: "23:38 UTC", early: "00:05 UTC"},
		{lang: "pl", late: "23:38 UTC", early: "00:05 UTC"},
		{lang: "tr", late: "23:38 UTC", early: "00:05 UTC"},
		{lang: "ar", late: "23:38 UTC", early: "00:05 UTC"},
		{lang: "ja", late: "23:38 UTC", early: "00:05 UTC"},
		{lang: "ko", late: "23:38 UTC", early: "00:05 UTC"},
		{lang: "zh-CN", late: "23:38 UTC", early: "00:05 UTC"},
		{lang: "zh-TW", late: "23:38 UTC", early: "00:05 UTC"},
		{lang: "xx", late: "11:38 PM UTC", early: "12:05 AM UTC"},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			covered[lookupLang(tt.lang).tag] = true
			for iso, want := range map[string]string{late: tt.late, early: tt.early} {
				page := render(t, Default(), with(fifoData(), func(d *Data) { d.LastUpdated = iso }), tt.lang)
				texts := lookupLang(tt.lang).textsFor(20)
				assert.Contains(t, page, html.EscapeString(texts[internalPrefix+"lastUpdatedBefore"])+
					`<time datetime="`+iso+`" dir="ltr" data-wr-time="lastUpdated">`+want+`</time>`+
					html.EscapeString(texts[internalPrefix+"lastUpdatedAfter"]))
			}
		})
	}
	assert.ElementsMatch(t, Languages(), slices.Collect(maps.Keys(covered)), "every language")
}

func TestLastUpdatedClockInput(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "another zone is written in UTC", in: "2026-12-03T16:38:18+01:00", want: "3:38 PM UTC"},
		{name: "no milliseconds", in: "2026-12-03T15:38:18Z", want: "3:38 PM UTC"},
		{name: "not a time: as it is", in: "yesterday", want: "yesterday"},
		{name: "empty", in: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, lookupLang("en").formatClock(tt.in))
		})
	}
}

func TestClockLayoutChecked(t *testing.T) {
	m := *languages["en"]
	for _, layout := range []string{"15 Uhr", "15:04", "15:04 {UTC}"} {
		m.Clock = layout
		_, err := compileLang("en", &m)
		assert.Error(t, err, layout)
	}
}
