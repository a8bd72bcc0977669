package template

import (
	"encoding/json"
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	drawOpen       = `<details class="draw" data-wr-if="lotteryIdentity"`
	drawIdentity   = "00000000075bcd15"
	drawCommitment = "2ec99663ca71e231324cad1af9df2e0570d0e3401bd18a3e02b1081f8a91de07"
	drawRecords    = "/lottery?at=1764853200"
)

// drawData is random queueing where admission is a draw, in interval
// 58828440 at odds 0.25, whose period's record is at drawRecords.
func drawData() *Data {
	return with(randomData(), func(d *Data) {
		d.LotteryIdentity, d.LotteryCommitment = drawIdentity, drawCommitment
		d.LotteryInterval, d.LotteryOdds = 58828440, 0.25
		d.LotteryRecords = drawRecords
	})
}

// drawTexts are the draw section's texts of lang, escaped as the page
// writes them.
func drawTexts(lang string) map[string]string {
	texts := lookupLang(lang).textsFor(30)
	out := map[string]string{}
	for _, k := range []string{"drawCheck", "drawIdentity", "drawCommitment", "drawInterval", "drawOdds", "drawCut", "drawRecords", "drawNoteBefore", "drawNoteAfter"} {
		out[k] = html.EscapeString(texts[internalPrefix+k])
	}
	return out
}

// drawRow is a row of the section as the page writes it: lotteryCut is
// that of lotteryOdds for a shuffle's cut.
func drawRow(label, name, value string, hidden bool) string {
	attrs, or := "", ""
	switch name {
	case "lotteryInterval":
		attrs = ` data-wr-if="lotteryInterval"`
	case "lotteryOdds":
		attrs = ` data-wr-if="lotteryInterval !lotteryShuffled"`
	case "lotteryCut":
		attrs, name = ` data-wr-if="lotteryInterval lotteryShuffled"`, "lotteryOdds"
	}
	if attrs != "" {
		or = ` data-wr-or="0"`
		if hidden {
			attrs += " hidden"
		}
	}
	return `<div` + attrs + `><dt>` + label + `</dt><dd><code dir="ltr" data-wr-text="` + name + `"` + or + `>` + value + `</code></dd></div>`
}

// recordsRow is the row of the section that links to the record at url,
// escaped as the page writes it: hidden, linking nowhere, without url.
func recordsRow(label, url string) string {
	if url == "" {
		return `<div data-wr-if="lotteryRecords" hidden><dt>` + label + `</dt><dd><a dir="ltr" data-wr-href="lotteryRecords" data-wr-text="lotteryRecords"></a></dd></div>`
	}
	return `<div data-wr-if="lotteryRecords"><dt>` + label + `</dt><dd><a dir="ltr" data-wr-href="lotteryRecords" data-wr-text="lotteryRecords" href="` + url + `">` + url + `</a></dd></div>`
}

// The section a visitor notes to check the draw: only where admission is
// a draw, whole, never an empty label; the interval and its odds only
// once the room has fixed them, the odds as the JSON writes them; the
// link to the published record only where the room gives it.
func TestDrawSection(t *testing.T) {
	tx := drawTexts("en")
	tests := []struct {
		name     string
		data     *Data
		section  bool     // shown, to visitors without JavaScript too
		interval string   // the interval shown, "" for rows hidden
		odds     string   // the odds shown
		records  string   // the record linked to, escaped; "" for its row hidden
		want     []string // in the page as shown
	}{
		{name: "fifo", data: fifoData()},
		{name: "random, one instance: no draw", data: randomData()},
		{name: "a commitment without identity", data: with(randomData(), func(d *Data) { d.LotteryCommitment = drawCommitment })},
		{name: "closed", data: with(drawData(), func(d *Data) { d.IsRejectQueue, d.IsRandomQueue, d.QueueingMethod = true, false, "reject" })},
		{name: "a draw", data: drawData(), section: true, interval: "58828440", odds: "0.25", records: drawRecords},
		{name: "odds not fixed yet", data: with(drawData(), func(d *Data) { d.LotteryInterval, d.LotteryOdds = 0, 0 }), section: true, records: drawRecords},
		{name: "odds of 0", data: with(drawData(), func(d *Data) { d.LotteryOdds = 0 }), section: true, interval: "58828440", odds: "0", records: drawRecords},
		{name: "tiny odds, as in the JSON", data: with(drawData(), func(d *Data) { d.LotteryOdds = 0.00001 }), section: true, interval: "58828440", odds: "0.00001", records: drawRecords},
		{name: "tinier odds, as in the JSON", data: with(drawData(), func(d *Data) { d.LotteryOdds = 1.5e-7 }), section: true, interval: "58828440", odds: "1.5e-7", records: drawRecords},
		{name: "odds of 1", data: with(drawData(), func(d *Data) { d.LotteryOdds = 1 }), section: true, interval: "58828440", odds: "1", records: drawRecords},
		{name: "no record given", data: with(drawData(), func(d *Data) { d.LotteryRecords = "" }), section: true, interval: "58828440", odds: "0.25"},
		{name: "a shuffle's cut", data: with(drawData(), func(d *Data) { d.LotteryShuffled, d.LotteryOdds = true, 0.4 }), section: true, interval: "58828440", odds: "0.4", records: drawRecords},
		{
			name: "a record after a query", data: with(drawData(), func(d *Data) { d.LotteryRecords = "https://audit.example/lottery?room=shop&at=1764853200" }),
			section: true, interval: "58828440", odds: "0.25", records: "https://audit.example/lottery?room=shop&amp;at=1764853200",
		},
		{
			name: "queue all", data: with(drawData(), func(d *Data) { d.QueueAll = true }), section: true, interval: "58828440", odds: "0.25", records: drawRecords,
			want: []string{"The site is not admitting anyone at the moment."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := render(t, Default(), tt.data, "en")
			seen := shown(page)
			for _, w := range tt.want {
				assert.Contains(t, seen, w)
			}
			if !tt.section {
				assert.NotContains(t, seen, "<details", "no section")
				for k, text := range tx {
					assert.NotContains(t, seen, text, "no %s", k)
				}
				assert.NotContains(t, seen, "waitingroom verify")
				if !tt.data.IsRejectQueue {
					assert.Contains(t, page, `<template data-wr-unfold="lotteryIdentity">`+"\n"+`<details class="draw"`, "for the live page")
				}
				return
			}
			assert.False(t, strings.Contains(page, "<template data-wr-unfold"), "the section itself")
			sec := section(seen)
			require.NotEmpty(t, sec)
			assert.True(t, strings.HasPrefix(sec, `<details class="draw" data-wr-if="lotteryIdentity">`+"\n<summary>"+tx["drawCheck"]+"</summary>"), "closed, unobtrusive: %s", sec)
			assert.Contains(t, sec, drawRow(tx["drawIdentity"], "lotteryIdentity", drawIdentity, false))
			assert.Contains(t, sec, drawRow(tx["drawCommitment"], "lotteryCommitment", drawCommitment, false))
			if tt.interval == "" {
				assert.Contains(t, sec, drawRow(tx["drawInterval"], "lotteryInterval", "0", true))
				assert.Contains(t, sec, drawRow(tx["drawOdds"], "lotteryOdds", "0", true))
				assert.Contains(t, sec, drawRow(tx["drawCut"], "lotteryCut", "0", true))
			} else {
				shuffled := tt.data.LotteryShuffled
				assert.Contains(t, sec, drawRow(tx["drawInterval"], "lotteryInterval", tt.interval, false))
				assert.Contains(t, sec, drawRow(tx["drawOdds"], "lotteryOdds", tt.odds, shuffled), "the odds, labelled as such but for a shuffle")
				assert.Contains(t, sec, drawRow(tx["drawCut"], "lotteryCut", tt.odds, !shuffled), "a shuffle's cut, labelled as such")
				b, err := json.Marshal(tt.data)
				require.NoError(t, err)
				if tt.odds != "0" {
					assert.Regexp(t, `"lotteryOdds":`+regexp.QuoteMeta(tt.odds)+`[,}]`, string(b), "the JSON's very number")
				}
			}
			assert.Contains(t, sec, recordsRow(tx["drawRecords"], tt.records))
			if tt.records == "" {
				assert.NotContains(t, sec, " href=", "no link")
			} else {
				assert.Equal(t, 1, strings.Count(sec, "<a "), "one link")
			}
			assert.Contains(t, sec, "<p>"+tx["drawNoteBefore"]+`<code dir="ltr">waitingroom verify</code>`+tx["drawNoteAfter"]+"</p>")
			assert.Equal(t, 1, strings.Count(page, "<details"))
		})
	}
}

// Every language has the section's texts, the command within its note,
// and the values left to right, also in a page written right to left.
func TestDrawEveryLanguage(t *testing.T) {
	for _, lang := range Languages() {
		t.Run(lang, func(t *testing.T) {
			tx := drawTexts(lang)
			for k, text := range tx {
				if k != "drawNoteBefore" && k != "drawNoteAfter" {
					assert.NotEmpty(t, strings.TrimSpace(text), k)
				}
			}
			assert.NotEmpty(t, strings.TrimSpace(tx["drawNoteBefore"]+tx["drawNoteAfter"]))
			page := render(t, Default(), drawData(), lang)
			sec := section(shown(page))
			require.NotEmpty(t, sec)
			assert.Contains(t, sec, "<summary>"+tx["drawCheck"]+"</summary>")
			for _, row := range []string{
				drawRow(tx["drawIdentity"], "lotteryIdentity", drawIdentity, false),
				drawRow(tx["drawCommitment"], "lotteryCommitment", drawCommitment, false),
				drawRow(tx["drawInterval"], "lotteryInterval", "58828440", false),
				drawRow(tx["drawOdds"], "lotteryOdds", "0.25", false),
				drawRow(tx["drawCut"], "lotteryCut", "0.25", true),
				recordsRow(tx["drawRecords"], drawRecords),
			} {
				assert.Contains(t, sec, row)
			}
			assert.Contains(t, sec, "<p>"+tx["drawNoteBefore"]+`<code dir="ltr">waitingroom verify</code>`+tx["drawNoteAfter"]+"</p>")
			assert.Equal(t, strings.Count(sec, "<code")+strings.Count(sec, "<a "), strings.Count(sec, ` dir="ltr"`), "every value left to right")
			assert.NotContains(t, sec, "{")
			if lang != "en" {
				for k, en := range drawTexts("en") {
					if strings.TrimSpace(en) != "" {
						assert.NotContains(t, sec, en, "English %s on the %s page", k, lang)
					}
				}
			}
		})
	}
	assert.True(t, strings.HasPrefix(render(t, Default(), drawData(), "ar"), `<!DOCTYPE html>`+"\n"+`<html lang="ar" dir="rtl">`))
}

// A value the page shows is escaped, whatever it holds.
func TestDrawEscapes(t *testing.T) {
	d := with(drawData(), func(d *Data) {
		d.LotteryIdentity = `"><script>alert(1)</script>`
		d.LotteryCommitment = `c0ffee' onmouseover='x' &amp;`
		d.LotteryRecords = `/lottery?at=1"><script>alert(2)</script>&x='y'`
	})
	page := render(t, Default(), d, "en")
	assert.Equal(t, 1, strings.Count(page, "<script"), "the live script alone")
	assert.NotContains(t, page, `' onmouseover`)
	sec := section(page)
	assert.Contains(t, sec, `data-wr-text="lotteryIdentity">&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;</code>`)
	assert.Contains(t, sec, `data-wr-text="lotteryCommitment">c0ffee&#39; onmouseover=&#39;x&#39; &amp;amp;</code>`)
	records := `/lottery?at=1&#34;&gt;&lt;script&gt;alert(2)&lt;/script&gt;&amp;x=&#39;y&#39;`
	assert.Contains(t, sec, `data-wr-text="lotteryRecords" href="`+records+`">`+records+`</a>`)
}

// The live page keeps the section as the page served with the latest JSON
// would show it, in place (a visitor who opened it finds it open): the
// interval and odds of each refresh interval, a new commitment and the
// link to its record, a draw that begins after the page was served or
// ends.
func TestLiveDraw(t *testing.T) {
	next := with(drawData(), func(d *Data) {
		d.LotteryInterval, d.LotteryOdds, d.LotteryCommitment = 58828441, 0.00001, strings.Repeat("ab", 32)
		d.LotteryRecords = "/lottery?at=1764856800&room=a"
	})
	noOdds := with(drawData(), func(d *Data) { d.LotteryInterval, d.LotteryOdds = 0, 0 })
	zeroOdds := with(drawData(), func(d *Data) { d.LotteryOdds = 0 })
	noRecords := with(drawData(), func(d *Data) { d.LotteryRecords = "" })
	tests := []struct {
		name    string
		page    *Data
		answers []*Data
		want    []*Data // the page each answer should read as; nil: the section hidden
	}{
		{"the next interval", drawData(), []*Data{next, drawData()}, []*Data{next, drawData()}},
		{"odds fixed later", noOdds, []*Data{drawData(), noOdds}, []*Data{drawData(), noOdds}},
		{"odds of 0", drawData(), []*Data{zeroOdds}, []*Data{zeroOdds}},
		{"a draw begins", randomData(), []*Data{randomData(), drawData(), next}, []*Data{nil, drawData(), next}},
		{"a draw ends, begins again", drawData(), []*Data{fifoData(), next}, []*Data{nil, next}},
		{"the record of the next period", drawData(), []*Data{next}, []*Data{next}},
		{"a record given, then not", noRecords, []*Data{drawData(), noRecords, next}, []*Data{drawData(), noRecords, next}},
		{"a draw begins without a record", randomData(), []*Data{noRecords, drawData()}, []*Data{noRecords, drawData()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, lang := range []string{"en", "ar"} {
				page := render(t, Default(), tt.page, lang)
				if tt.page.LotteryIdentity != "" { // opened by the visitor: it stays open
					page = strings.Replace(page, drawOpen+">", drawOpen+" open data-wr-mark>", 1)
				}
				mains := runLive(t, page, lang, tt.answers...)
				for i, w := range tt.want {
					got := section(shown(mains[i+1]))
					if w == nil {
						if tt.page.LotteryIdentity == "" && i == 0 {
							assert.Empty(t, got, "%s: nothing unfolded", lang)
							assert.Contains(t, mains[i+1], `<template data-wr-unfold="lotteryIdentity">`)
							continue
						}
						assert.True(t, strings.HasPrefix(got, drawOpen+" open hidden>"), "%s, answer %d: hidden: %s", lang, i, got)
						continue
					}
					want := section(shown(loaded(t, w, lang)))
					require.NotEmpty(t, want)
					if tt.page.LotteryIdentity != "" {
						want = strings.Replace(want, drawOpen+">", drawOpen+" open>", 1)
					}
					assert.Equal(t, want, got, "%s, answer %d", lang, i)
					assert.False(t, strings.Contains(mains[i+1], "<template data-wr-unfold"), "unfolded")
					assert.Contains(t, got, ">"+strconv.FormatInt(w.LotteryInterval, 10)+"<")
					if w.LotteryRecords != "" {
						assert.Contains(t, got, ` href="`+html.EscapeString(w.LotteryRecords)+`">`, "%s, answer %d: the link", lang, i)
					} else {
						assert.NotContains(t, got, " href=", "%s, answer %d: no link", lang, i)
					}
				}
			}
		})
	}
}
