package admin

import (
	"bytes"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/go-waitingroom/waitingroom"
)

// adminPageSource is the status page's template: HTML with its script and
// style inline.
//
//go:embed status.html
var adminPageSource string

// adminPage is adminPageSource, parsed; utc writes Unix seconds as a UTC
// time, as the rest of the page.
var adminPage = template.Must(template.New("status").Funcs(template.FuncMap{
	"utc":     func(s int64) string { return time.Unix(s, 0).UTC().Format(time.RFC3339) },
	"utcTime": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
}).Parse(adminPageSource))

// pageData is what the status page template gets.
type pageData struct {
	Nonce    string
	Status   adminStatus
	Outflow  string
	Wait     string
	LastSync string
	// Base starts the links to the other resources (relBase).
	Base string
	// Session: the page was asked for with a session cookie (SignIn),
	// and offers to sign out.
	Session bool
	// Queue sums up the queue by arrival minute; the script draws it.
	Queue string
	// Parked says how many visitors the challenge parked on this
	// instance; "" if none. The script tells whether it still does.
	Parked string
	// Draws gives the lottery period in force's latest odds and shuffle
	// cut, as the script's draws does; "" for none.
	Draws string
}

// page serves the status page, its script and style allowed by a
// nonce of the response's own; session says that r was authenticated by
// a session cookie.
func (a *admin) page(w http.ResponseWriter, r *http.Request, session bool) {
	var n [16]byte
	_, _ = rand.Read(n[:])
	st := a.status()
	d := pageData{
		Nonce:    hex.EncodeToString(n[:]),
		Status:   st,
		Outflow:  strconv.FormatFloat(st.OutflowPerMinute, 'f', 1, 64),
		Wait:     st.EstimatedWait.Formatted,
		LastSync: "never",
		Base:     relBase(r),
		Session:  session,
	}
	switch {
	case st.EstimatedWait.Full:
		d.Wait = "more than a day"
	case !st.EstimatedWait.Known:
		d.Wait = "unknown"
	}
	if st.LastSync != nil {
		d.LastSync = st.LastSync.Format(time.RFC3339)
	}
	d.Queue, d.Parked = queueSummary(st.Queue), parkedSummary(st.Counters)
	if r := st.Lottery.Current; r != nil {
		if n := len(r.Odds); n > 0 {
			d.Draws += " · odds " + strconv.FormatFloat(r.Odds[n-1].Odds, 'g', -1, 64)
		}
		if n := len(r.Cuts); n > 0 {
			d.Draws += " · shuffle cut " + strconv.FormatFloat(r.Cuts[n-1].Odds, 'g', -1, 64)
		}
	}
	var buf bytes.Buffer
	if err := adminPage.Execute(&buf, d); err != nil {
		writeError(w, http.StatusInternalServerError, "waitingroom: rendering the status page failed")
		return
	}
	writePage(w, http.StatusOK, "default-src 'none'; script-src 'nonce-"+d.Nonce+"'; style-src 'nonce-"+d.Nonce+
		"'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'", buf.Bytes())
}

// writePage writes body, an HTML page of the admin API, with status code
// and the Content-Security-Policy csp: never framed, no referrer sent.
func writePage(w http.ResponseWriter, code int, csp string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// queueSummary sums up the queue by arrival minute q, oldest first.
func queueSummary(q []adminBucket) string {
	n, minutes := 0, 0
	var first, last time.Time
	for _, b := range q {
		if b.Waiting <= 0 {
			continue
		}
		if minutes == 0 {
			first = b.Minute
		}
		n, minutes, last = n+b.Waiting, minutes+1, b.Minute
	}
	if n == 0 {
		return "Nobody is waiting."
	}
	return fmt.Sprintf("%d waiting, arrived %s to %s UTC (%s).", n, first.Format("15:04"), last.Format("15:04"), plural(minutes, "minute"))
}

// parkedSummary says how many visitors the challenge parked, by the
// counters c; "" if none.
func parkedSummary(c waitingroom.Counters) string {
	if c.ChallengesParked == 0 {
		return ""
	}
	return plural(int(min(c.ChallengesParked, math.MaxInt32)), "visitor") + " parked by the challenge since this instance started: a parked visitor never gets a chance until they answer it."
}

// plural is n and unit, in the plural unless n is 1.
func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}
