package template

import (
	"net/url"
	"strconv"
	"strings"
)

// Options say how a room writes its waiting page: the language of the
// default page's texts, when and how a client gets the page as JSON, and
// where it links to the lottery's records.
// The zero value of each field means its default. A room copies them in
// its New; they do not change while it runs (the page's template does:
// it is one of the room's live settings). The methods of Options only
// read it, and are safe for concurrent use.
type Options struct {
	// Language is the language of the default page's texts and of the
	// formatted waits, a BCP 47 tag among Languages(). Default "en".
	Language string
	// NegotiateLanguage lets each visitor's Accept-Language choose the
	// page's language among Languages() (Negotiate), Language being the
	// fallback. Default false.
	NegotiateLanguage bool
	// JSONKey is the top-level key of JSON waiting responses (WriteJSON).
	// Default "waitingRoom"; "cfWaitingRoom" serves clients written for
	// the commercial product unchanged.
	JSONKey string
	// StrictJSONAccept answers JSON only to requests whose one Accept
	// header is exactly "application/json" (IsExactJSON), as the
	// commercial product does; anything else, such as
	// "application/json, text/plain", gets the page. Default false: JSON
	// for any Accept header that lists application/json and not
	// text/html (WantsJSON), which is what clients of earlier releases
	// rely on, and what a browser never sends for a page.
	StrictJSONAccept bool
	// LotteryRecords is where visitors reach the lottery's public
	// records (admin.Records): a URL path, such as "/lottery", or an
	// absolute URL. Where admission is a draw, the waiting page and its
	// JSON then give the record of the period in progress
	// (Data.LotteryRecords: LotteryRecords with ?at= the period's start,
	// or &at= after a query it holds), and the default page links to it
	// in its "Check the draw" section. Default "": no link.
	LotteryRecords string
}

// RecordsAt returns the URL of the lottery's record of the period that
// starts at start (Unix seconds): LotteryRecords with at=start added to
// its query (before a fragment it holds), or "" when LotteryRecords is
// empty.
func (o *Options) RecordsAt(start int64) string {
	if o.LotteryRecords == "" {
		return ""
	}
	base, frag, hasFrag := strings.Cut(o.LotteryRecords, "#")
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
		if strings.HasSuffix(base, "?") || strings.HasSuffix(base, "&") {
			sep = ""
		}
	}
	u := base + sep + url.Values{"at": {strconv.FormatInt(start, 10)}}.Encode()
	if hasFrag {
		u += "#" + frag
	}
	return u
}

// LanguageFor returns the language of the page for a request whose
// Accept-Language header is acceptLanguage: Language, or, with
// NegotiateLanguage, the one of Languages() it asks for most (Negotiate).
func (o *Options) LanguageFor(acceptLanguage string) string {
	if !o.NegotiateLanguage {
		return o.Language
	}
	return Negotiate(acceptLanguage, o.Language)
}

// JSONFor reports whether a request whose Accept headers are accept gets
// the page as JSON: see StrictJSONAccept. Several Accept headers are one
// list, as if joined by commas.
func (o *Options) JSONFor(accept []string) bool {
	if !o.StrictJSONAccept {
		if len(accept) > 1 {
			return WantsJSON(strings.Join(accept, ","))
		}
		return len(accept) > 0 && WantsJSON(accept[0])
	}
	return len(accept) == 1 && IsExactJSON(accept[0])
}
