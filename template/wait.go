package template

// FormatWait writes a wait of the given whole minutes for people to read, in
// the language of the BCP 47 tag lang (resolved as in Supported; English when
// it has no texts), with the plural forms of that language:
//
//	minutes   en                    fr                       pl
//	≤ 0       less than a minute    moins d’une minute       mniej niż minuta
//	1         1 minute              1 minute                 1 minuta
//	22        22 minutes            22 minutes               22 minuty
//	60        1 hour                1 heure                  1 godzina
//	125       2 hours 5 minutes     2 heures et 5 minutes    2 godziny 5 minut
//
// Numbers are written in ASCII digits in every language. The result suits
// Data.WaitTimeFormatted, Data.TimeUntilEventStartFormatted and
// Data.TimeUntilEventEndFormatted; the default page places it in a sentence
// of the same language. FormatWait is safe for concurrent use.
func FormatWait(lang string, minutes int) string {
	return lookupLang(lang).formatWait(minutes, false)
}

// FormatWaitRange writes a range of waits, lo to hi in whole minutes, as
// FormatWait writes each end: "5 minutes to 15 minutes" in English, "de 5
// minutes à 15 minutes" in French, "od 5 minut do 15 minut" in Polish (whose
// range takes the genitive). It does not reorder or merge the ends; the
// random queue's estimate passes its 25th and 75th percentiles. The result
// suits Data.WaitTimeFormatted. FormatWaitRange is safe for concurrent use.
func FormatWaitRange(lang string, lo, hi int) string {
	return lookupLang(lang).formatWaitRange(lo, hi)
}

// FormatUnavailable is what stands for a wait or a time nobody knows, in
// the language lang (resolved as in Supported): "unavailable" in English,
// as the commercial product writes waitTimeFormatted when waitTimeKnown is
// false. It suits Data.WaitTimeFormatted, Data.TimeUntilEventStartFormatted
// and Data.TimeUntilEventEndFormatted. FormatUnavailable is safe for
// concurrent use.
func FormatUnavailable(lang string) string {
	return lookupLang(lang).wait.unavailable
}
