package waitingroom

import (
	"bytes"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-waitingroom/waitingroom/page"
)

// pageCacheSize bounds the pages kept per sync: FIFO visitors see a page
// per arrival minute and refresh interval, a few dozen variants at most.
const pageCacheSize = 512

// pageCache keeps rendered waiting pages. Page data changes only with a
// sync (estimates, lastUpdated) and the refresh interval, so most waiting
// responses are a copy of bytes rendered once.
type pageCache struct {
	mu    sync.Mutex
	epoch string // LastUpdated of the cached pages
	pages map[pageKey][]byte
}

type pageKey struct {
	data page.Data
	json bool
	tmpl *page.Template
	lang string
}

// render returns the page for data, as JSON or HTML.
func (rm *Room) render(tmpl *page.Template, data *page.Data, lang string, asJSON bool) ([]byte, error) {
	key := pageKey{data: *data, json: asJSON, tmpl: tmpl, lang: lang}
	c := &rm.pages
	c.mu.Lock()
	if c.epoch != data.LastUpdated || c.pages == nil {
		c.epoch, c.pages = data.LastUpdated, make(map[pageKey][]byte)
	}
	b, ok := c.pages[key]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	var buf bytes.Buffer
	var err error
	if asJSON {
		err = page.WriteJSON(&buf, rm.cfg.JSONKey, data)
	} else {
		err = tmpl.Render(&buf, data, lang)
	}
	if err != nil {
		return nil, err
	}
	b = buf.Bytes()
	c.mu.Lock()
	if c.epoch == data.LastUpdated && len(c.pages) < pageCacheSize {
		c.pages[key] = b
	}
	c.mu.Unlock()
	return b, nil
}

// Respond writes the effect of d, a decision Check made for r: the visitor
// cookie when it changed and, when the request may not pass, the waiting
// page (or the closed page) with the configured status code. It reports
// whether the request may go on to the application; if so, nothing but the
// cookie has been written and the caller serves the request. Handler and
// framework adapters are built on Check and Respond.
//
// Waiting responses carry Cache-Control: no-store and, except the closed
// page, a Refresh header; they are JSON when the request's Accept header
// lists application/json and not text/html, HTML otherwise.
func (rm *Room) Respond(w http.ResponseWriter, r *http.Request, d Decision) bool {
	if d.cookie != "" {
		w.Header().Add("Set-Cookie", rm.cookieName+"="+d.cookie+rm.cookieAttrs)
	}
	if d.Pass() {
		return true
	}
	lang := rm.language(r)
	data := rm.pageData(d, lang)
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Add("Vary", "Accept")
	if rm.cfg.NegotiateLanguage {
		h.Add("Vary", "Accept-Language")
	}
	status := rm.cfg.QueueingStatusCode
	if d.Outcome == Waiting {
		secs := strconv.Itoa(data.RefreshIntervalSeconds)
		h.Set("Refresh", secs)
		if status == http.StatusTooManyRequests {
			h.Set("Retry-After", secs)
		}
	}
	asJSON := page.WantsJSON(r.Header.Get("Accept"))
	tmpl := d.policyOrZero().tmpl
	if tmpl == nil {
		tmpl = rm.tmpl
	}
	out, err := rm.render(tmpl, data, lang, asJSON)
	if err != nil {
		rm.log.Error("waitingroom: rendering the waiting page failed", "err", err)
		rm.cfg.ErrorHandler(w, r, err)
		return false
	}
	if asJSON {
		h.Set("Content-Type", "application/json")
	} else {
		h.Set("Content-Type", "text/html; charset=utf-8")
	}
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(status)
	_, _ = w.Write(out)
	return false
}

// setCookieAttrs returns what follows the value in the header that sets
// the room's cookie, as http.SetCookie writes it. The cookie's name and
// value need no quoting or escaping (a value is base64url), so Respond
// writes the header as name=value followed by these, for a fraction of
// what http.SetCookie costs.
func (rm *Room) setCookieAttrs() string {
	c := http.Cookie{
		Name:     rm.cookieName,
		Value:    "v",
		Path:     rm.cfg.CookiePath,
		Domain:   rm.cfg.CookieDomain,
		HttpOnly: true,
		Secure:   rm.secure,
		SameSite: rm.sameSite,
		// A cross-site iframe keeps its cookie where browsers block
		// third-party cookies: partitioned by the embedding site.
		Partitioned: rm.sameSite == http.SameSiteNoneMode,
	}
	return strings.TrimPrefix(c.String(), rm.cookieName+"=v")
}

// RespondError writes the response for an error from Check (a closed room) with
// Config.ErrorHandler, for adapters built on Check and Respond.
func (rm *Room) RespondError(w http.ResponseWriter, r *http.Request, err error) {
	rm.cfg.ErrorHandler(w, r, err)
}

// pageData is what the waiting page of decision d shows.
func (rm *Room) pageData(d Decision, lang string) *page.Data {
	p := d.policyOrZero()
	s, e := p.Settings, d.Estimate
	at := d.at
	if at == 0 {
		at = rm.now()
	}
	data := &page.Data{
		InWaitingRoom: true,
		QueueAll:      s.QueueAll,
		// Whole seconds: the exact moment of a sync is nothing a visitor
		// needs, and nothing to time refreshes by.
		LastUpdated:        time.UnixMilli(at).UTC().Truncate(time.Second).Format("2006-01-02T15:04:05.000Z"),
		QueueingMethod:     string(s.QueueingMethod),
		IsFIFOQueue:        s.QueueingMethod == FIFO,
		IsRandomQueue:      s.QueueingMethod == Random,
		IsPassthroughQueue: s.QueueingMethod == Passthrough,
		IsRejectQueue:      s.QueueingMethod == Reject,
	}
	if d.Outcome == Waiting {
		data.RefreshIntervalSeconds = max(1, int(math.Ceil(d.RefreshAfter.Seconds())))
	}
	if e.Known {
		m := int(e.Wait / time.Minute)
		data.WaitTimeKnown = true
		data.WaitTime = m
		data.WaitTimeHours, data.WaitTimeHourMinutes = m/60, m%60
		data.WaitTime25Percentile = int(e.P25 / time.Minute)
		data.WaitTime50Percentile = int(e.P50 / time.Minute)
		data.WaitTime75Percentile = int(e.P75 / time.Minute)
	}
	// Unknown reads "unavailable", as in the product. Nobody is ever
	// turned away from the queue, so queueIsFull stays false, even for a
	// wait too long to estimate.
	data.WaitTimeFormatted = e.FormattedIn(lang)
	data.PositionInLine, data.ChancePerRefreshOneIn = placeInLine(e, data)
	data.TimeUntilEventStartFormatted = page.FormatUnavailable(lang)
	data.TimeUntilEventEndFormatted = data.TimeUntilEventStartFormatted
	if ev := p.event; ev != nil {
		now := d.now
		if now == 0 {
			now = rm.now()
		}
		untilStart := ceilMinutes(ev.Start.UnixMilli() - now)
		untilEnd := ceilMinutes(ev.End.UnixMilli() - now)
		data.IsEventPrequeueing = p.prequeue
		data.IsEventActive = !p.prequeue
		data.ShuffleAtEventStart = ev.ShuffleAtStart
		data.TimeUntilEventEnd = untilEnd
		data.TimeUntilEventEndFormatted = page.FormatWait(lang, untilEnd)
		if p.prequeue {
			data.TimeUntilEventStart = untilStart
			data.TimeUntilEventStartFormatted = page.FormatWait(lang, untilStart)
		}
	}
	return data
}

// placeInLine is what the page shows of a visitor's place: FIFO, the
// position in line; random, the chance at each refresh as 1 in n.
func placeInLine(e Estimate, data *page.Data) (position, oneIn int) {
	switch {
	case data.IsFIFOQueue:
		return e.Position, 0
	case data.IsRandomQueue && e.ChancePerMinute > 0 && data.RefreshIntervalSeconds > 0:
		c := 1 - math.Pow(1-min(e.ChancePerMinute, 1), float64(data.RefreshIntervalSeconds)/60)
		return 0, int(min(max(math.Round(1/c), 1), 1e9))
	}
	return 0, 0
}

// ceilMinutes is ms rounded up to whole minutes, never negative.
func ceilMinutes(ms int64) int {
	if ms <= 0 {
		return 0
	}
	return int((ms + 59_999) / 60_000)
}

// language is the language of the page for r: the configured one, or,
// with NegotiateLanguage, the best the visitor's Accept-Language asks for.
func (rm *Room) language(r *http.Request) string {
	if !rm.cfg.NegotiateLanguage {
		return rm.cfg.Language
	}
	return page.Negotiate(r.Header.Get("Accept-Language"), rm.cfg.Language)
}

// Handler returns the middleware: admitted and bypassed requests go to
// next, with the ticket in their context (TicketFromContext); everyone else
// gets the waiting page, as HTML or, for clients that ask for JSON only,
// as JSON. The method value is the middleware: chi's r.Use(room.Handler)
// works as it is.
//
// The application ends an admitted visitor's session, freeing their slot
// at once, with the response header "Waiting-Room-Command: revoke" (which
// Handler removes before the response leaves) or by calling Revoke with the
// request's context, in both cases before the response is written.
func (rm *Room) Handler(next http.Handler) http.Handler {
	return &handler{rm: rm, next: next}
}

// handler is the middleware of Handler. Its ServeHTTP is a method rather
// than a closure so that it is compiled here, where the request copy of
// WithContext is known to stay on the stack, and not inlined into callers.
type handler struct {
	rm   *Room
	next http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rm := h.rm
	var d Decision
	if err := rm.check(r, &d); err != nil {
		rm.RespondError(w, r, err)
		return
	}
	// An admitted visitor's cookie is mostly left alone: nothing to write.
	if (d.Outcome != Admitted || d.cookie != "") && !rm.Respond(w, r, d) {
		return
	}
	if d.Outcome != Admitted {
		// Bypassed: the command header is the room's, never the
		// client's, whatever the application sends.
		rw := &revokeWriter{ResponseWriter: w, rm: rm}
		h.next.ServeHTTP(rw, r)
		rw.commit()
		return
	}
	// One allocation for the request carrying the ticket, its context and
	// the writer that watches for a revoke. WithContext is inlined, so its
	// own copy of r stays on the stack.
	a := &admittedRequest{tc: ticketCtx{
		Context: r.Context(),
		id:      d.state.id, acceptedAt: d.state.acceptedAt, bucket: int32(d.state.bucket), checkedIn: d.state.checkedIn(),
		rw: revokeWriter{ResponseWriter: w, rm: rm},
	}}
	a.tc.rw.tc = &a.tc
	a.req = *r.WithContext(&a.tc)
	h.next.ServeHTTP(&a.tc.rw, &a.req)
	a.tc.rw.commit()
}

// admittedRequest is what Handler allocates for an admitted request, 384
// bytes (a size class of the allocator) in one piece.
type admittedRequest struct {
	req http.Request
	tc  ticketCtx
}
