package waitingroom

import (
	"bytes"
	"cmp"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/internal/hook"
	"github.com/go-waitingroom/waitingroom/lottery"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/template"
)

// pageCacheSize bounds the pages kept per sync: FIFO visitors see a page
// per arrival minute and refresh interval, a few dozen variants at most.
const pageCacheSize = 512

// pageCache keeps rendered HTML pages. Page data changes with a sync
// (estimates), the refresh interval and the second of the visitor's latest
// attempt (lastUpdated), so most HTML waiting pages are a copy of bytes
// rendered once: every early refresh, and the visitors of one second.
type pageCache struct {
	mu    sync.Mutex
	epoch int64 // the view of the cached pages (decision.at)
	pages map[pageKey][]byte
}

type pageKey struct {
	data template.Data
	tmpl *template.Template
	lang string
}

var pageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// render returns the page for data, as JSON or HTML: JSON (written in less
// time than a lookup took) and a page naming its visitor (the lottery's
// identity) written into buf, the others from the cache of the view epoch.
func (rm *Room) render(tmpl *template.Template, data *template.Data, lang string, asJSON bool, epoch int64, buf *bytes.Buffer) ([]byte, error) {
	if asJSON {
		err := template.WriteJSON(buf, rm.cfg.Page.JSONKey, data)
		return buf.Bytes(), err
	}
	if data.LotteryIdentity != "" {
		err := tmpl.Render(buf, data, lang)
		return buf.Bytes(), err
	}
	key := pageKey{data: *data, tmpl: tmpl, lang: lang}
	c := &rm.pages
	c.mu.Lock()
	if c.epoch != epoch || c.pages == nil {
		c.epoch, c.pages = epoch, make(map[pageKey][]byte)
	}
	b, ok := c.pages[key]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	var page bytes.Buffer
	if err := tmpl.Render(&page, data, lang); err != nil {
		return nil, err
	}
	b = page.Bytes()
	c.mu.Lock()
	if c.epoch == epoch && len(c.pages) < pageCacheSize {
		c.pages[key] = b
	}
	c.mu.Unlock()
	return b, nil
}

// respond writes the effect of d, a decision check made for r: the visitor
// cookie when it changed and, when the request may not pass, the waiting
// page (or the closed page) with the configured status code. It reports
// whether the request may go on to the application; if so, nothing but the
// cookie has been written and the caller serves the request.
//
// Waiting responses carry Cache-Control: no-store and, except the closed
// page, a Refresh header; they are JSON when the request's Accept header
// lists application/json and not text/html (with Config.Page.StrictJSONAccept:
// when it is exactly application/json), HTML otherwise.
func (rm *Room) respond(w http.ResponseWriter, r *http.Request, d decision) bool {
	if d.cookie != "" {
		w.Header().Add("Set-Cookie", rm.cookieName+"="+d.cookie+rm.cookieAttrs)
	}
	if d.pass() {
		return true
	}
	lang := rm.cfg.Page.LanguageFor(r.Header.Get("Accept-Language"))
	data := rm.pageData(d, lang)
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Add("Vary", "Accept")
	if rm.cfg.Page.NegotiateLanguage {
		h.Add("Vary", "Accept-Language")
	}
	pol := d.policyOrZero()
	if pol.method == nil {
		// Not a decision of check: the settings in force now.
		pol = rm.policyOf(rm.syncer.Snapshot(), rm.now())
	}
	status := pol.queueingStatusCode()
	asJSON := rm.cfg.Page.JSONFor(r.Header.Values("Accept"))
	if d.Outcome == outcomeWaiting {
		// The time left until the next chance, where the page's
		// refreshIntervalSeconds counts from lastUpdated: a browser
		// follows the header (the first refresh it reads), and comes
		// back the moment the chance is due after an early refresh too.
		secs := strconv.Itoa(ceilSeconds(d.RefreshAfter.Milliseconds()))
		if d.chal == nil || asJSON {
			// A page with a challenge reloads itself once it is
			// answered (or, without JavaScript, by its own refresh).
			h.Set("Refresh", secs)
		}
		if status == http.StatusTooManyRequests {
			h.Set("Retry-After", secs)
		}
	}
	tmpl := pol.tmpl
	buf := pageBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	defer pageBuffers.Put(buf)
	out, err := rm.render(tmpl, data, lang, asJSON, d.at, buf)
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
// value need no quoting or escaping (a value is base64url), so respond
// writes the header as name=value followed by these, for a fraction of
// what http.SetCookie costs.
func (rm *Room) setCookieAttrs() string {
	c := http.Cookie{
		Name:     rm.cookieName,
		Value:    "v",
		Path:     rm.cfg.Cookie.Path,
		Domain:   rm.cfg.Cookie.Domain,
		HttpOnly: true,
		Secure:   rm.cfg.Cookie.Secure,
		SameSite: rm.cfg.Cookie.SameSite,
		// A cross-site iframe keeps its cookie where browsers block
		// third-party cookies: partitioned by the embedding site.
		Partitioned: rm.cfg.Cookie.SameSite == http.SameSiteNoneMode,
	}
	return strings.TrimPrefix(c.String(), rm.cookieName+"=v")
}

// pageData is what the waiting page of decision d shows.
func (rm *Room) pageData(d decision, lang string) *template.Data {
	p := d.policyOrZero()
	s, e := p.Settings, d.Estimate
	now := d.now
	if now == 0 {
		now = rm.now()
	}
	// lastUpdated is the visitor's latest attempt to get in, as the
	// product documents it: the time of this request when it was one, of
	// the attempt before it when it came too early (which changes
	// nothing). Whole seconds: the page is the same for a second's
	// visitors, and cached.
	last := d.last
	if last == 0 {
		last = now
	}
	data := &template.Data{
		InWaitingRoom:      true,
		QueueAll:           s.QueueAll,
		LastUpdated:        time.UnixMilli(last).UTC().Truncate(time.Second).Format("2006-01-02T15:04:05.000Z"),
		QueueingMethod:     string(s.QueueingMethod),
		IsFIFOQueue:        s.QueueingMethod == FIFO,
		IsRandomQueue:      s.QueueingMethod == Random,
		IsPassthroughQueue: s.QueueingMethod == Passthrough,
		IsRejectQueue:      s.QueueingMethod == Reject,
		CookieAttributes:   rm.scriptCookieAttrs,
	}
	switch {
	case d.Outcome == outcomeWaiting:
		// From the latest attempt to the next chance: the visitor's
		// interval, which an early refresh does not shorten.
		data.RefreshIntervalSeconds = ceilSeconds(now + d.RefreshAfter.Milliseconds() - last)
	case data.IsRejectQueue:
		// The closed page: never 0, so a template's meta refresh of it
		// does not loop (the default page does not refresh it).
		data.RefreshIntervalSeconds = ceilSeconds(rm.cfg.RefreshInterval.Milliseconds())
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
	// Unknown reads "unavailable", as in the product. Nobody is turned
	// away from the queue: queueIsFull stays false, even for a long wait.
	data.WaitTimeFormatted = e.Formatted(lang)
	data.PositionInLine, data.ChancePerRefreshOneIn = placeInLine(e, data, rm.cfg.RefreshInterval)
	data.QueueLength = e.Waiting
	// Those queued before the pre-queue opened go first, unshuffled.
	shuffled := p.listing[1] != 0 && d.state.bucket >= p.listing[0] && d.state.bucket < p.listing[1]
	if d.Outcome == outcomeWaiting && (data.IsRandomQueue || shuffled) {
		rm.lotteryData(d.state.id, data, now, shuffled)
	}
	if d.chal != nil && d.Outcome == outcomeWaiting {
		rm.challengeData(&d, data, now)
	}
	data.TimeUntilEventStartFormatted, data.TimeUntilEventEndFormatted = template.FormatUnavailable(lang), template.FormatUnavailable(lang)
	if ev := p.event; ev != nil {
		untilStart, untilEnd := ceilMinutes(ev.Start.UnixMilli()-now), ceilMinutes(ev.End.UnixMilli()-now)
		data.IsEventPrequeueing = p.prequeue
		// Active from the opening of its pre-queue to its end, as the
		// product's JSON reference has it.
		data.IsEventActive = true
		data.ShuffleAtEventStart = shuffled
		data.TimeUntilEventEnd = untilEnd
		data.TimeUntilEventEndFormatted = template.FormatWait(lang, untilEnd)
		if p.prequeue {
			data.TimeUntilEventStart = untilStart
			data.TimeUntilEventStartFormatted = template.FormatWait(lang, untilStart)
		}
	}
	return data
}

// lotteryData shows the waiting visitor id, where admission is a draw
// (random, slots.go, or a shuffle), what checks it: their identity, the
// period's commitment and where its record is published, the interval in
// progress and its odds once fixed (shuffled: the shuffle's cut in force).
func (rm *Room) lotteryData(id uint64, data *template.Data, now int64, shuffled bool) {
	if v := rm.syncer.Snapshot(); v != nil {
		if r, ok := v.RecordAt(now, rm.cfg.RefreshInterval.Milliseconds()); ok {
			data.LotteryIdentity, data.LotteryCommitment = lottery.FormatIdentity(id), r.Commitment.String()
			data.LotteryRecords = rm.cfg.Page.RecordsAt(r.Start)
			oddsAt := v.OddsAt
			if shuffled {
				oddsAt = v.CutAt
			}
			if w, o, ok := oddsAt(now, rm.cfg.RefreshInterval.Milliseconds()); ok {
				data.LotteryInterval, data.LotteryOdds, data.LotteryShuffled = w, o, shuffled
			}
		}
	}
}

// ceilSeconds is ms rounded up to whole seconds, at least one.
func ceilSeconds(ms int64) int {
	return int(max(1, (ms+999)/1000))
}

// placeInLine is what the page shows of a visitor's place: FIFO, the
// position in line; random, the chance at each refresh as 1 in n, one
// sooner than every (a winner's retry, an early reload) counted whole.
func placeInLine(e Estimate, data *template.Data, every time.Duration) (position, oneIn int) {
	switch {
	case data.IsFIFOQueue:
		return e.Position, 0
	case data.IsRandomQueue && e.ChancePerMinute > 0 && data.RefreshIntervalSeconds > 0:
		c := 1 - math.Pow(1-min(e.ChancePerMinute, 1), max(float64(data.RefreshIntervalSeconds), every.Seconds())/60)
		return 0, int(min(max(math.Round(1/c), 1), 1e9))
	}
	return 0, 0
}

// ceilMinutes is ms rounded up to whole minutes, never negative.
func ceilMinutes(ms int64) int {
	return int(max(0, ms+59_999) / 60_000)
}

// challengeData adds to data the challenge the waiting page of d gives:
// a puzzle bound to the visitor and now (Unix ms), or a hosted widget.
func (rm *Room) challengeData(d *decision, data *template.Data, now int64) {
	var widget string
	if d.chal.Kind == challenge.Hosted {
		h := rm.cfg.ChallengeVerifier
		data.Challenge, data.ChallengeSiteKey = string(h.Provider), h.SiteKey
		widget = h.Widget()
	} else {
		data.Challenge = string(challenge.PoW)
		data.ChallengePuzzle = rm.puzzles.Issue(d.state.id, time.UnixMilli(now), d.chal.DifficultyAt(rm.syncer.Snapshot().Waiting))
	}
	data.ChallengeWidget = template.ChallengeScriptFor(data.ChallengePuzzle, widget, rm.cookieName+"_challenge", data.CookieAttributes, ceilSeconds(d.RefreshAfter.Milliseconds()))
}

// What packages admin and sim get from a room through internal/hook: the
// parts an operator's tools read and applications have no use for.
func init() {
	hook.InstanceID = func(c any, id func() string) { c.(*Config).newID = id }
	hook.HistoryStore = func(room any) store.HistoryStore {
		hs, _ := room.(*Room).store.(store.HistoryStore)
		return hs
	}
	hook.Syncer = func(room any) any { return room.(*Room).syncer }
	hook.PreviewPage = func(room, settings any, now time.Time, est any, lang string) hook.Page {
		return room.(*Room).previewPage(settings.(*Settings), now.UnixMilli(), est.(Estimate), lang)
	}
	hook.Now = func(room any) time.Time { return time.UnixMilli(room.(*Room).now()) }
	hook.CookieSecure = func(room any) bool { return room.(*Room).cfg.Cookie.Secure }
}

// previewPage is the waiting page a visitor arriving at now would get under
// s, with the wait e: the page Respond writes for such a decision, neither
// counted nor cached (see hook.PreviewPage).
func (rm *Room) previewPage(s *Settings, now int64, e Estimate, lang string) hook.Page {
	lang = cmp.Or(lang, rm.cfg.Page.Language)
	d := decision{Outcome: outcomeWaiting, Estimate: e, RefreshAfter: rm.cfg.RefreshInterval.Truncate(time.Second), at: now, now: now, last: now, state: cookieState{bucket: floorDiv(now, 1000)}}
	if s.QueueingMethod == Reject {
		d.Outcome, d.RefreshAfter = outcomeRejected, 0
	}
	pol := rm.policyAt(s, now)
	d.policy = &pol
	return hook.Page{Status: pol.queueingStatusCode(), Data: *rm.pageData(d, lang), Template: pol.tmpl, Language: lang}
}
