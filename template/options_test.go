package template

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOptionsLanguageFor(t *testing.T) {
	fixed := Options{Language: "de"}
	negotiated := Options{Language: "de", NegotiateLanguage: true}
	for _, tc := range []struct {
		name   string
		o      Options
		accept string
		want   string
	}{
		{"fixed", fixed, "fr", "de"},
		{"negotiated", negotiated, "fr, en;q=0.5", "fr"},
		{"negotiated, nothing matches", negotiated, "tlh", "de"},
		{"negotiated, no header", negotiated, "", "de"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.o.LanguageFor(tc.accept))
		})
	}
}

func TestOptionsJSONFor(t *testing.T) {
	loose, strict := Options{}, Options{StrictJSONAccept: true}
	for _, tc := range []struct {
		name              string
		accept            []string
		wantLoose, strict bool
	}{
		{"none", nil, false, false},
		{"json", []string{"application/json"}, true, true},
		{"json, spaced and upper case", []string{" Application/JSON "}, true, true},
		{"json and text", []string{"application/json, text/plain"}, true, false},
		{"json and html", []string{"application/json, text/html"}, false, false},
		{"two headers", []string{"application/json", "text/plain"}, true, false},
		{"json in the second header", []string{"text/plain", "application/json"}, true, false},
		{"html in the second header", []string{"application/json", "text/html"}, false, false},
		{"a browser", []string{"text/html,application/xhtml+xml,*/*;q=0.8"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.wantLoose, loose.JSONFor(tc.accept))
			assert.Equal(t, tc.strict, strict.JSONFor(tc.accept))
		})
	}
}

func TestOptionsRecordsAt(t *testing.T) {
	for _, tc := range []struct {
		name, records, want string
	}{
		{"none", "", ""},
		{"a path", "/lottery", "/lottery?at=1700000000"},
		{"a path with a query", "/lottery?room=shop", "/lottery?room=shop&at=1700000000"},
		{"an empty query", "/lottery?", "/lottery?at=1700000000"},
		{"a query ending with &", "/lottery?room=shop&", "/lottery?room=shop&at=1700000000"},
		{"an absolute URL", "https://audit.example/lottery", "https://audit.example/lottery?at=1700000000"},
		{"a fragment", "/lottery?room=shop#record", "/lottery?room=shop&at=1700000000#record"},
		{"a question mark in the fragment", "/lottery#a?b", "/lottery?at=1700000000#a?b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{LotteryRecords: tc.records}
			assert.Equal(t, tc.want, o.RecordsAt(1_700_000_000))
		})
	}
}
