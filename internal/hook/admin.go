package hook

import (
	"time"

	"github.com/go-waitingroom/waitingroom/lottery"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/template"
)

// What package admin needs: the kept history (admin.Minutes), the
// waiting page in each state (admin.Preview), and for the status page's
// sign-in the room's clock and whether its cookies are Secure.
var (
	// HistoryStore returns the history of room's store: nil if the store
	// keeps none (it does not implement store.HistoryStore). It does no
	// I/O.
	HistoryStore func(room any) store.HistoryStore

	// Syncer returns room's syncer (a *share.Syncer of the room's
	// settings), which Unwritten and Lottery read.
	Syncer func(room any) any

	// PreviewPage returns the waiting page room would give a waiting
	// visitor at now under settings (a *waitingroom.Settings; with
	// QueueingMethod Reject, the closed page), with the wait est (a
	// waitingroom.Estimate), in the language lang ("" for the room's
	// Config.Page.Language). Nothing in the room changes: no visitor is
	// counted, no cookie made, no page cached. It does no I/O.
	PreviewPage func(room, settings any, now time.Time, est any, lang string) Page

	// Now returns room's clock (Config.Now, aligned to the clock the
	// instances share). It does no I/O.
	Now func(room any) time.Time

	// CookieSecure reports whether room's cookies are Secure
	// (Config.Cookie.Secure): the site is served over HTTPS.
	CookieSecure func(room any) bool
)

// Unwritten returns the tallies of the minutes room's store may not show
// yet, oldest first within each of two runs: those this instance took out
// of the shared state but could not write yet, then those in the shared
// state as of its latest sync (the minute in progress among them). They
// are the caller's to keep. It does no I/O.
func Unwritten(room any) []store.Tally {
	return Syncer(room).(interface{ Unwritten() []store.Tally }).Unwritten()
}

// Lottery returns the periods of room's lottery as of its latest sync
// (share.Syncer.Lottery): commitments, and the seeds revealed. It does no
// I/O.
func Lottery(room any) []lottery.Record {
	return Syncer(room).(interface{ Lottery() []lottery.Record }).Lottery()
}

// Page is a waiting page as PreviewPage describes it.
type Page struct {
	// Status is the response's status code.
	Status int
	// Data is what the template is given.
	Data template.Data
	// Template is the template the settings call for: their Template (a
	// scheduled event's included), else the default page.
	Template *template.Template
	// Language is the page's language: the lang asked for, or the room's
	// Config.Page.Language for "".
	Language string
}
