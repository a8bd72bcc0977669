package template

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitMinutes are the minutes every language is checked at: singular,
// dual, few and many forms, hours alone and hours with minutes.
var waitMinutes = []int{0, 1, 2, 5, 11, 21, 22, 25, 60, 61, 125}

func TestFormatWait(t *testing.T) {
	tests := map[string][]string{ // by language, one per waitMinutes
		"en": {
			"less than a minute", "1 minute", "2 minutes", "5 minutes", "11 minutes", "21 minutes",
			"22 minutes", "25 minutes", "1 hour", "1 hour 1 minute", "2 hours 5 minutes",
		},
		"fr": {
			"moins d’une minute", "1 minute", "2 minutes", "5 minutes", "11 minutes", "21 minutes",
			"22 minutes", "25 minutes", "1 heure", "1 heure et 1 minute", "2 heures et 5 minutes",
		},
		"pl": {
			"mniej niż minuta", "1 minuta", "2 minuty", "5 minut", "11 minut", "21 minut",
			"22 minuty", "25 minut", "1 godzina", "1 godzina 1 minuta", "2 godziny 5 minut",
		},
		"ar": {
			"أقل من دقيقة", "دقيقة واحدة", "دقيقتان", "5 دقائق", "11 دقيقة", "21 دقيقة",
			"22 دقيقة", "25 دقيقة", "ساعة واحدة", "ساعة واحدة ودقيقة واحدة", "ساعتان و5 دقائق",
		},
		"ja": {
			"1分未満", "1分", "2分", "5分", "11分", "21分",
			"22分", "25分", "1時間", "1時間1分", "2時間5分",
		},
	}
	for lang, want := range tests {
		require.Len(t, want, len(waitMinutes), lang)
		for i, m := range waitMinutes {
			t.Run(fmt.Sprintf("%s/%d", lang, m), func(t *testing.T) {
				assert.Equal(t, want[i], FormatWait(lang, m))
			})
		}
	}

	more := []struct {
		lang    string
		minutes int
		want    string
	}{
		// Polish: 12–14 take many, 22–24 few, as do hours.
		{"pl", 3, "3 minuty"},
		{"pl", 4, "4 minuty"},
		{"pl", 12, "12 minut"},
		{"pl", 14, "14 minut"},
		{"pl", 24, "24 minuty"},
		{"pl", 32, "32 minuty"},
		{"pl", 112, "1 godzina 52 minuty"},
		{"pl", 5 * 60, "5 godzin"},
		{"pl", 12 * 60, "12 godzin"},
		{"pl", 22*60 + 2, "22 godziny 2 minuty"},
		// Arabic: few for 3–10 (also 103), many for 11–99, other for 100–102.
		{"ar", 3, "3 دقائق"},
		{"ar", 10, "10 دقائق"},
		{"ar", 120, "ساعتان"},
		{"ar", 122, "ساعتان ودقيقتان"},
		{"ar", 100 * 60, "100 ساعة"},
		{"ar", 102 * 60, "102 ساعة"},
		{"ar", 103 * 60, "103 ساعات"},
		{"ar", 111 * 60, "111 ساعة"},
		// French: 0 and 1 are one; whole millions are many.
		{"fr", 1000000 * 60, "1000000 d’heures"},
		{"fr", 2 * 60, "2 heures"},
		{"es", 1000000, "16666 horas y 40 minutos"},
		{"es", 1000000 * 60, "1000000 de horas"},
		{"it", 2000000 * 60, "2000000 di ore"},
		{"pt-BR", 1, "1 minuto"},
		{"pt-BR", 1000000 * 60, "1000000 de horas"},
		// Hindi: the hour is inflected, the minute is not.
		{"hi", 1, "1 मिनट"},
		{"hi", 60, "1 घंटा"},
		{"hi", 125, "2 घंटे 5 मिनट"},
		{"de", 61, "1 Stunde und 1 Minute"},
		{"de", 150, "2 Stunden und 30 Minuten"},
		{"nl", 120, "2 uur"},
		{"nl", 61, "1 uur en 1 minuut"},
		{"tr", 125, "2 saat 5 dakika"},
		{"ko", 125, "2시간 5분"},
		{"zh-CN", 125, "2小时5分钟"},
		{"zh-TW", 125, "2小時5分鐘"},
		{"zh-TW", 0, "不到1分鐘"},
		// Negative waits are under a minute; tags resolve as in Supported.
		{"en", -5, "less than a minute"},
		{"ja", math.MinInt, "1分未満"},
		{"pt", 5, "5 minutos"},
		{"zh-Hant-HK", 5, "5分鐘"},
		{"AR-eg", 2, "دقيقتان"},
		{"xx", 5, "5 minutes"},
		{"", 61, "1 hour 1 minute"},
	}
	for _, tt := range more {
		t.Run(fmt.Sprintf("%s/%d", tt.lang, tt.minutes), func(t *testing.T) {
			assert.Equal(t, tt.want, FormatWait(tt.lang, tt.minutes))
		})
	}
}

// TestFormatWaitEveryLanguage spot-checks the languages not written out
// above: every wait is written, holds its numbers and is not English.
func TestFormatWaitEveryLanguage(t *testing.T) {
	for _, lang := range Languages() {
		for _, m := range waitMinutes {
			got := FormatWait(lang, m)
			assert.NotEmpty(t, strings.TrimSpace(got), "%s %d", lang, m)
			assert.NotContains(t, got, "{", "%s %d", lang, m)
			assert.NotContains(t, got, "}", "%s %d", lang, m)
			if lang == "ar" {
				continue // one and two are words, without digits; written out above
			}
			h, min := m/60, m%60
			if h > 0 {
				assert.Contains(t, got, strconv.Itoa(h), "%s %d", lang, m)
			}
			if min > 0 {
				assert.Contains(t, got, strconv.Itoa(min), "%s %d", lang, m)
			}
		}
		if lang != "en" {
			// Minutes may be spelt alike (French "5 minutes"); these are not.
			for _, m := range []int{0, 60, 125} {
				assert.NotEqual(t, FormatWait("en", m), FormatWait(lang, m), "%s %d", lang, m)
			}
		}
		rng := FormatWaitRange(lang, 5, 15)
		assert.Contains(t, rng, "5", lang)
		assert.Contains(t, rng, "15", lang)
		assert.NotContains(t, rng, "{", lang)
		if lang != "en" {
			assert.NotContains(t, rng, " to ", lang)
		}
	}
}

func TestFormatWaitRange(t *testing.T) {
	tests := []struct {
		lang   string
		lo, hi int
		want   string
	}{
		{"en", 5, 15, "5 minutes to 15 minutes"},
		{"en", 0, 1, "less than a minute to 1 minute"},
		{"en", 61, 125, "1 hour 1 minute to 2 hours 5 minutes"},
		{"fr", 5, 15, "de 5 minutes à 15 minutes"},
		{"fr", 1, 60, "de 1 minute à 1 heure"},
		{"pl", 5, 15, "od 5 minut do 15 minut"},
		{"pl", 1, 2, "od 1 minuty do 2 minut"},
		{"pl", 22, 60, "od 22 minut do 1 godziny"},
		{"pl", 61, 125, "od 1 godziny 1 minuty do 2 godzin 5 minut"},
		{"pl", 0, 1, "od niecałej minuty do 1 minuty"},
		{"ar", 5, 15, "من 5 دقائق إلى 15 دقيقة"},
		{"ar", 2, 5, "من دقيقتين إلى 5 دقائق"},
		{"ar", 1, 120, "من دقيقة واحدة إلى ساعتين"},
		{"ar", 61, 122, "من ساعة واحدة ودقيقة واحدة إلى ساعتين ودقيقتين"},
		{"ja", 5, 15, "5分から15分"},
		{"ja", 61, 125, "1時間1分から2時間5分"},
		{"de", 5, 15, "5 Minuten bis 15 Minuten"},
		{"es", 1, 2, "de 1 minuto a 2 minutos"},
		{"it", 5, 15, "da 5 minuti a 15 minuti"},
		{"pt-BR", 5, 15, "de 5 minutos a 15 minutos"},
		{"nl", 5, 15, "5 minuten tot 15 minuten"},
		{"tr", 5, 15, "5 dakika ile 15 dakika arası"},
		{"hi", 60, 120, "1 घंटे से 2 घंटे तक"},
		{"hi", 5, 15, "5 मिनट से 15 मिनट तक"},
		{"ko", 5, 15, "5분~15분"},
		{"zh-CN", 5, 15, "5分钟至15分钟"},
		{"zh-TW", 5, 15, "5分鐘至15分鐘"},
		{"zz", 5, 15, "5 minutes to 15 minutes"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d-%d", tt.lang, tt.lo, tt.hi), func(t *testing.T) {
			assert.Equal(t, tt.want, FormatWaitRange(tt.lang, tt.lo, tt.hi))
		})
	}
}

// referenceFormatWait is the room's English formatting as it was before
// FormatWait, which must keep it byte for byte.
func referenceFormatWait(m int64) string {
	if m <= 0 {
		return "less than a minute"
	}
	h, m := m/60, m%60
	var s string
	if h > 0 {
		s = referencePlural(h, "hour")
		if m == 0 {
			return s
		}
		s += " "
	}
	return s + referencePlural(m, "minute")
}

func referencePlural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.FormatInt(n, 10) + " " + unit + "s"
}

func TestFormatWaitEnglishUnchanged(t *testing.T) {
	check := func(m int) {
		t.Helper()
		want := referenceFormatWait(int64(m))
		for _, lang := range []string{"en", "en-US", "", "xx"} {
			if got := FormatWait(lang, m); got != want {
				t.Fatalf("FormatWait(%q, %d) = %q, want %q", lang, m, got, want)
			}
		}
	}
	for m := -3; m <= 3000; m++ {
		check(m)
	}
	for _, m := range []int{24 * 60, 1e6, math.MaxInt32, math.MaxInt, math.MinInt} {
		check(m)
	}
	for _, r := range [][2]int{{5, 15}, {0, 1}, {1, 1}, {59, 61}, {60, 120}, {125, 3}, {-1, 1e6}} {
		want := referenceFormatWait(int64(r[0])) + " to " + referenceFormatWait(int64(r[1]))
		assert.Equal(t, want, FormatWaitRange("en", r[0], r[1]))
	}
}

func BenchmarkFormatWait(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		FormatWait("pl", 125)
	}
}
