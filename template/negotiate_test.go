package template

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Accept-Language values as browsers send them.
const (
	acceptLangChrome  = "de-DE,de;q=0.9,en-US;q=0.8,en;q=0.7"
	acceptLangFirefox = "fr-FR,fr;q=0.8,en-US;q=0.5,en;q=0.3"
	acceptLangSafari  = "ja-JP"
	acceptLangEdge    = "pt-BR,pt;q=0.9,en-US;q=0.8,en;q=0.7"
	acceptLangChinese = "zh-TW,zh;q=0.9,en-US;q=0.8,en;q=0.7"
)

func TestNegotiate(t *testing.T) {
	tests := []struct {
		header, fallback, want string
	}{
		// Browsers.
		{acceptLangChrome, "en", "de"},
		{acceptLangFirefox, "en", "fr"},
		{acceptLangSafari, "en", "ja"},
		{acceptLangEdge, "en", "pt-BR"},
		{acceptLangChinese, "en", "zh-TW"},
		{"en-US,en;q=0.9", "de", "en"},
		{"ar-SA,ar;q=0.9,en-US;q=0.8,en;q=0.7", "en", "ar"},
		{"hi-IN,hi;q=0.9,en-IN;q=0.8", "en", "hi"},
		{"ko-KR,ko;q=0.9,en-US;q=0.8", "en", "ko"},
		{"tr-TR,tr;q=0.9", "en", "tr"},
		{"pl-PL,pl;q=0.9,en-US;q=0.8", "en", "pl"},
		{"nl-BE,nl;q=0.9,fr-BE;q=0.8", "en", "nl"},
		{"it-IT,it;q=0.9", "en", "it"},
		{"es-419,es;q=0.9", "en", "es"},
		{"sv-SE,sv;q=0.9,en-US;q=0.8,en;q=0.7", "de", "en"}, // unsupported first choice

		// Aliases and regions.
		{"pt", "en", "pt-BR"},
		{"pt-PT", "en", "pt-BR"},
		{"zh", "en", "zh-CN"},
		{"zh-Hans", "en", "zh-CN"},
		{"zh-CN", "en", "zh-CN"},
		{"zh-SG", "en", "zh-CN"},
		{"zh-Hans-HK", "en", "zh-CN"},
		{"zh-Hant", "en", "zh-TW"},
		{"zh-HK", "en", "zh-TW"},
		{"zh-MO", "en", "zh-TW"},
		{"zh-Hant-TW", "en", "zh-TW"},
		{"en-GB", "de", "en"},
		{"de-CH-1996", "en", "de"},
		{"en-US-x-twain", "de", "en"},

		// Case, spaces, separators.
		{"PT-br", "en", "pt-BR"},
		{"ZH-hant-tw", "en", "zh-TW"},
		{"En_Us", "de", "en"},
		{"  fr ; q=0.9 , de ; Q=0.95 ", "en", "de"},
		{"\tko\t", "en", "ko"},

		// Weights.
		{"en;q=0.5, ar;q=0.8, tr;q=0.7", "de", "ar"},
		{"es;q=0.8, it;q=0.8", "en", "es"}, // ties: first listed
		{"de;q=0.001, fr;q=0", "en", "de"},
		{"de;q=1.000, fr", "en", "de"},
		{"de;q=0.5, fr;q=0.50", "en", "de"},
		{"ja;q=0.9;level=1, ko", "en", "ko"},

		// q=0 rules out.
		{"de;q=0, fr;q=0.1", "en", "fr"},
		{"de;q=0", "en", "en"},
		{"fr, fr;q=0", "en", "en"},
		{"zh;q=0, zh-TW, ja;q=0.5", "en", "ja"},
		{"zh-Hant;q=0, zh-TW, zh-CN;q=0.5", "en", "zh-CN"},
		{"pt;q=0, pt-BR", "en", "en"},
		{"en-GB;q=0, en", "de", "en"}, // en-GB is not offered; en is
		{"fr;q=0, *", "fr", "fr"},     // nothing acceptable: the fallback
		{"fr;q=0, *", "en", "en"},

		// Wildcard.
		{"*", "de", "de"},
		{"xx, *;q=0.5", "ko", "ko"},
		{"*, fr;q=0.5", "en", "en"},
		{"fr, *;q=0.5", "en", "fr"},
		{"*;q=0, fr;q=0.1", "en", "fr"},

		// Malformed weights: the range is ignored.
		{"de;q=2, fr;q=0.5", "en", "fr"},
		{"de;q=0.5555, fr;q=0.1", "en", "fr"},
		{"de;q=1.001, fr;q=0.1", "en", "fr"},
		{"de;q=abc", "en", "en"},
		{"de;q=, fr;q=0.1", "en", "fr"},
		{"de;q=-1", "en", "en"},
		{"de;q=.5", "en", "en"},

		// Garbage.
		{"", "en", "en"},
		{"", "", ""},
		{",,,;;;===", "en", "en"},
		{"\x00\xff\xfe garbage \x7f", "en", "en"},
		{"💩, ☃;q=0.5", "ja", "ja"},
		{"-de, _fr", "en", "en"},
		{"d3, e, english", "ko", "ko"},
		{"i-klingon, x-private", "en", "en"},
		{"de\x00", "en", "en"},
		{"de-" + strings.Repeat("x", 100), "en", "de"},
		{";q=0.5", "en", "en"},
		{"de;;;q=0.5, fr;q=0.4", "en", "de"},
		{"nothing matches", "xx", "xx"}, // fallback unchanged, supported or not

		// Limits.
		{strings.Repeat("xx, ", 31) + "de", "en", "de"}, // the 32nd range
		{strings.Repeat("xx, ", 32) + "de", "en", "en"}, // the 33rd is not read
		{strings.Repeat(", ", 100) + "de", "en", "de"},  // empty entries are not ranges
		{"de" + strings.Repeat(" ", 5000), "en", "en"},  // cut off at 4 KiB: not guessed
		{"ko, " + strings.Repeat("x", 1<<20), "en", "ko"},
		{strings.Repeat("xx-XX;q=0.5, ", 1<<20/13) + "de", "en", "en"},
		{"fr;q=0.1, " + strings.Repeat("a", 4100) + ", de", "en", "fr"}, // de lies past 4 KiB
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%q→%s", tt.header, tt.want)
		if len(tt.header) > 60 {
			name = fmt.Sprintf("%q...(%d bytes)→%s", tt.header[:40], len(tt.header), tt.want)
		}
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tt.want, Negotiate(tt.header, tt.fallback))
		})
	}
}

func TestNegotiateBoundedWork(t *testing.T) {
	huge := strings.Repeat("xx-Latn-XX;q=0.5, ", 1<<25/18) // 32 MiB
	start := time.Now()
	for i := 0; i < 1000; i++ {
		Negotiate(huge, "en")
	}
	// 1000 calls on 32 MiB would take seconds if the whole value were read.
	assert.Less(t, time.Since(start), 2*time.Second)

	for _, h := range []string{acceptLangChrome, acceptLangChinese, huge, "fr;q=0, *"} {
		allocs := testing.AllocsPerRun(100, func() { Negotiate(h, "en") })
		assert.Zero(t, allocs, "allocations for %.40q", h)
	}
}

func TestSupported(t *testing.T) {
	for _, tag := range []string{
		"en", "de", "pt-BR", "pt", "pt-PT", "zh", "zh-Hant", "zh-HK", "ZH_tw", "en-GB", "ar-EG",
		" ja ", "es-419", "hi-IN", "fr-CA-u-ca-gregory",
	} {
		assert.True(t, Supported(tag), tag)
	}
	for _, tag := range []string{"", "*", "xx", "sv", "e", "english", "-en", "en\x00", "i-klingon", "x-en", strings.Repeat("a", 1<<16)} {
		assert.False(t, Supported(tag), "%.40q", tag)
	}
}

func FuzzNegotiate(f *testing.F) {
	for _, s := range []string{
		"", "*", "de", acceptLangChrome, acceptLangFirefox, acceptLangSafari, acceptLangEdge, acceptLangChinese,
		"zh-Hant-HK;q=0.5, pt;q=0.7", "de;q=0, *", "en;q=1.000, fr;q=0.", "de;q=0.5555", ",,;=", "x-y-z-",
		"zh_hans_cn", "ar;q=0.9;q=0.1",
	} {
		f.Add(s, "en")
	}
	f.Add("fr", "")
	f.Add("xx", "zz")
	f.Fuzz(func(t *testing.T, header, fallback string) {
		got := Negotiate(header, fallback)
		if got != Negotiate(header, fallback) {
			t.Fatal("not deterministic")
		}
		if got == fallback {
			return
		}
		if !slices.Contains(Languages(), got) {
			t.Fatalf("Negotiate(%q, %q) = %q: not a language", header, fallback, got)
		}
		head := header
		if len(head) > maxAcceptLanguageBytes {
			head = head[:maxAcceptLanguageBytes]
		}
		primary, _, _ := strings.Cut(got, "-")
		if !strings.Contains(strings.ToLower(head), primary) {
			t.Fatalf("Negotiate(%q, %q) = %q, not asked for", header, fallback, got)
		}
	})
}

func BenchmarkNegotiate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Negotiate(acceptLangChrome, "en")
	}
}
