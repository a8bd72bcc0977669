package template

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompileLangErrors(t *testing.T) {
	good := func() *messages {
		m := *languages["en"]
		return &m
	}
	tests := []struct {
		name   string
		change func(*messages)
	}{
		{"missing placeholder", func(m *messages) { m.WaitFIFO = "Your wait is long." }},
		{"placeholder twice", func(m *messages) { m.WaitRandom = "{wait} {wait}" }},
		{"refresh without n", func(m *messages) { m.Refresh[other] = "Refreshes often." }},
		{"refresh with n twice", func(m *messages) { m.Refresh[one] = "{n} {n}" }},
		{"empty text", func(m *messages) { m.KeepOpen = "" }},
		{"blank text", func(m *messages) { m.EventShuffle = " " }},
		{"bad dir", func(m *messages) { m.Dir = "up" }},
		{"no plural rule", func(m *messages) { m.Plural = nil }},
		{"no plural forms", func(m *messages) { m.Refresh = plurals{} }},
		{"missing plural form", func(m *messages) { m.Refresh[one] = "" }},
		{"plural rule needing forms the language lacks", func(m *messages) {
			m.Plural = pluralPolish // en has no few and many forms
		}},
		{"misspelt placeholder", func(m *messages) { m.EventStarts = "The event starts in {tiem}. {time}" }},
		{"stray brace", func(m *messages) { m.QueueAll = "The site is closed }" }},
		{"event starts without time", func(m *messages) { m.EventStarts = "The event starts soon." }},
		{"event ends without time", func(m *messages) { m.EventEnds = "The event ends soon." }},
		{"minutes without n", func(m *messages) { m.Minutes[other] = "minutes" }},
		{"no hours", func(m *messages) { m.Hours = plurals{} }},
		{"empty less than a minute", func(m *messages) { m.LessThanMinute = "" }},
		{"hours and minutes reversed", func(m *messages) { m.HoursMinutes = "{m} {h}" }},
		{"hours and minutes without m", func(m *messages) { m.HoursMinutes = "{h}" }},
		{"range without hi", func(m *messages) { m.Range = "{lo} onwards" }},
		{"range reversed", func(m *messages) { m.Range = "{hi} from {lo}" }},
		{"range forms missing a category", func(m *messages) { m.RangeMinutes = plurals{other: "{n} minutes"} }},
		{"no draw summary", func(m *messages) { m.DrawCheck = "" }},
		{"no odds label", func(m *messages) { m.DrawOdds = "" }},
		{"no record label", func(m *messages) { m.DrawRecords = "" }},
		{"draw note without the command", func(m *messages) { m.DrawNote = "Check the draw later." }},
		{"draw note with another placeholder", func(m *messages) { m.DrawNote = "Check it with {n}." }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := good()
			tt.change(m)
			_, err := compileLang("en", m)
			assert.Error(t, err)
		})
	}
	_, err := compileLang("en", good())
	assert.NoError(t, err)
}

func TestSplitPlaceholder(t *testing.T) {
	for _, tc := range []struct {
		text     string
		optional bool
		want     piece
		err      bool
	}{
		{"Wait {wait}.", false, piece{before: "Wait ", after: ".", hasValue: true}, false},
		{"{wait}", false, piece{hasValue: true}, false},
		{"No wait.", true, piece{before: "No wait."}, false},
		{"No wait.", false, piece{}, true},
		{"{wait} {wait}", true, piece{}, true},
		{"Wait {n} {wait}", false, piece{}, true},
		{"Wait {wait", true, piece{}, true},
		{"  ", true, piece{}, true},
	} {
		got, err := splitPlaceholder(tc.text, "{wait}", tc.optional)
		if tc.err {
			assert.Error(t, err, "%q", tc.text)
			continue
		}
		require.NoError(t, err, "%q", tc.text)
		assert.Equal(t, tc.want, got, "%q", tc.text)
	}
}

func TestPieceFill(t *testing.T) {
	assert.Equal(t, "Wait 5 min.", piece{before: "Wait ", after: " min.", hasValue: true}.fill("5"))
	assert.Equal(t, "Soon.", piece{before: "Soon."}.fill("5"), "no placeholder: no value")
}

func TestSplitTwo(t *testing.T) {
	got, err := splitTwo("from {lo} to {hi} min", "{lo}", "{hi}")
	require.NoError(t, err)
	assert.Equal(t, [3]string{"from ", " to ", " min"}, got)
	for _, text := range []string{
		"{hi} to {lo}",     // out of order
		"from {lo}",        // one missing
		"{lo} {lo} {hi}",   // twice
		"{lo} to {hi} {x}", // another brace
	} {
		_, err := splitTwo(text, "{lo}", "{hi}")
		assert.Error(t, err, "%q", text)
	}
}
