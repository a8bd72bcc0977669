package template

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A name no page fills is an error at Parse that names its tag, its line
// and the closest known variable; ParseAllowUnknown lists it instead.
func TestParseUnknownVariables(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want []UnknownVariable // none: Parse accepts src
	}{
		{name: "known variable", src: "<p>{{waitTime}} {{waitTimeFormatted}}</p>"},
		{name: "known section and inverted section", src: "{{#waitTimeKnown}}a{{/waitTimeKnown}}{{^isFIFOQueue}}b{{/isFIFOQueue}}"},
		{name: "known triple mustache and ampersand", src: "{{{turnstile}}}{{&liveScript}}"},
		{name: "the current value in a section", src: "{{#waitTime}}{{.}}{{/waitTime}}"},
		{name: "the default page's texts", src: "<title>{{wr_title}}</title>"},
		{name: "a delimiter change", src: "{{=<% %>=}}<% waitTime %>"},
		{
			name: "unknown variable",
			src:  "<p>\n{{waitTimeMinutes}}</p>",
			want: []UnknownVariable{{Name: "waitTimeMinutes", Tag: "{{waitTimeMinutes}}", Line: 2, Suggestion: "waitTime"}},
		},
		{
			name: "case-insensitive near miss, section",
			src:  "{{#isFifoQueue}}fifo{{/isFifoQueue}}",
			want: []UnknownVariable{{Name: "isFifoQueue", Tag: "{{#isFifoQueue}}", Line: 1, Suggestion: "isFIFOQueue"}},
		},
		{
			name: "typo, inverted section",
			src:  "a\nb\n{{^waitTimeKnwon}}unknown{{/waitTimeKnwon}}",
			want: []UnknownVariable{{Name: "waitTimeKnwon", Tag: "{{^waitTimeKnwon}}", Line: 3, Suggestion: "waitTimeKnown"}},
		},
		{
			name: "triple mustache",
			src:  "{{{ turnstyle }}}",
			want: []UnknownVariable{{Name: "turnstyle", Tag: "{{{ turnstyle }}}", Line: 1, Suggestion: "turnstile"}},
		},
		{
			name: "ampersand",
			src:  "{{& livescript}}",
			want: []UnknownVariable{{Name: "livescript", Tag: "{{& livescript}}", Line: 1, Suggestion: "liveScript"}},
		},
		{
			name: "inside a known section",
			src:  "{{#isRandomQueue}}{{waitTime50percentile}}{{/isRandomQueue}}",
			want: []UnknownVariable{{Name: "waitTime50percentile", Tag: "{{waitTime50percentile}}", Line: 1, Suggestion: "waitTime50Percentile"}},
		},
		{
			name: "nothing close",
			src:  "{{shoppingCartTotal}}",
			want: []UnknownVariable{{Name: "shoppingCartTotal", Tag: "{{shoppingCartTotal}}", Line: 1}},
		},
		{
			name: "a dotted name",
			src:  "{{queueLength.value}}",
			want: []UnknownVariable{{Name: "queueLength.value", Tag: "{{queueLength.value}}", Line: 1, Suggestion: "queueLength"}},
		},
		{
			name: "a default text misspelled",
			src:  "{{wr_titel}}",
			want: []UnknownVariable{{Name: "wr_titel", Tag: "{{wr_titel}}", Line: 1, Suggestion: "wr_title"}},
		},
		{
			name: "several, each once, in order",
			src:  "{{positon}}{{#isFifoQueue}}{{positon}}{{/isFifoQueue}}",
			want: []UnknownVariable{
				{Name: "positon", Tag: "{{positon}}", Line: 1, Suggestion: "positionInLine"},
				{Name: "isFifoQueue", Tag: "{{#isFifoQueue}}", Line: 1, Suggestion: "isFIFOQueue"},
			},
		},
		{
			name: "after a delimiter change: no line",
			src:  "{{=<% %>=}}<% waittime %>",
			want: []UnknownVariable{{Name: "waittime", Tag: "{{waittime}}", Suggestion: "waitTime"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lenient, err := ParseAllowUnknown(tc.src)
			require.NoError(t, err)
			assert.Equal(t, tc.want, lenient.Unknown())
			tmpl, err := Parse(tc.src)
			if len(tc.want) == 0 {
				require.NoError(t, err)
				assert.Empty(t, tmpl.Unknown())
				return
			}
			require.ErrorIs(t, err, ErrUnknownVariable)
			assert.Nil(t, tmpl)
			msg := err.Error()
			assert.True(t, strings.HasPrefix(msg, "waitingroom/template: unknown variable: "), msg)
			for _, u := range tc.want {
				assert.Contains(t, msg, u.Tag)
				if u.Suggestion != "" {
					assert.Contains(t, msg, "did you mean "+u.Suggestion+"?")
				}
			}
		})
	}
}

func TestUnknownVariableString(t *testing.T) {
	assert.Equal(t, "{{waitTimeMinutes}} on line 3 (did you mean waitTime?)",
		UnknownVariable{Name: "waitTimeMinutes", Tag: "{{waitTimeMinutes}}", Line: 3, Suggestion: "waitTime"}.String())
	assert.Equal(t, "{{x}}", UnknownVariable{Name: "x", Tag: "{{x}}"}.String())
}

// Partials are refused before names are looked at.
func TestParsePartialBeforeNames(t *testing.T) {
	_, err := ParseAllowUnknown("{{> header}}{{nope}}")
	assert.ErrorIs(t, err, errPartial)
	_, err = Parse("{{#nope}}{{> header}}{{/nope}}")
	assert.ErrorIs(t, err, errPartial)
}

// Variables are the documented names: every one of Data's JSON names, and
// the two slots of markup.
func TestVariables(t *testing.T) {
	v := Variables()
	for _, n := range []string{"inWaitingRoom", "waitTime", "refreshIntervalSeconds", "isRejectQueue", "turnstile", "liveScript", "chancePerRefreshOneIn"} {
		assert.Contains(t, v, n)
	}
	for _, n := range v {
		assert.False(t, strings.HasPrefix(n, internalPrefix), n)
	}
	v[0] = "changed"
	assert.NotEqual(t, "changed", Variables()[0], "a copy")
}
