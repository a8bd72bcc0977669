package waitingroom_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/forwardauth"
	"github.com/go-waitingroom/waitingroom/internal/fronttest"
	"github.com/go-waitingroom/waitingroom/internal/share"
)

// The model's clients behind nginx with passes (modelCase.passes): every
// request goes through a model of docs/forward-auth/nginx.md's configuration in
// front of the forward-auth handler (NewForwardAuth). A request with a good pass (fronttest.CheckPass, at the
// clock's second) reaches the application with the pass's ticket and
// the room never sees it; any other asks the room (mode "status", with
// the revoke command in the revoke location), and on a 401 nginx's
// error_page asks for the page (mode "page", the status answer's cookie
// with it) from any instance. The Set-Cookie and Waiting-Room-Pass
// answers reach the client's jar as a browser keeps them, in the order
// the answers arrive.

// The values of forwardauth.ModeHeader that nginx sends.
const (
	modeStatus = "status"
	modePage   = "page"
)

// appNginx is the application behind nginx: it reads the ticket nginx
// copies onto the request (from the pass or from the room's answer), and
// records every request that reaches it. A revoke's request carries
// "revoked", not the identity: which session it ended (the cookie's, or
// a new place's that the revoked cookie brought and the same request let
// in) the model learns from the instances (learnRevokes).
func (m *model) appNginx(inst int, client int, ticket string) {
	if ticket == "revoked" {
		return
	}
	rec := appRecord{inst: inst, client: client, at: m.now()}
	tk, ok := waitingroom.ParseTicket(ticket)
	if !ok || tk.ID == 0 {
		m.t.Errorf("seed %d: a request reached the application with ticket %q", m.seed, ticket)
		return
	}
	rec.id, rec.acc, rec.bucket = tk.ID, tk.AcceptedAt.UnixMilli(), tk.Bucket.Unix()
	m.mu.Lock()
	m.records = append(m.records, rec)
	m.mu.Unlock()
}

// sendNginx sends one request from client c, holding cookie and pass, to
// nginx, whose auth requests go to instance inst.
func (m *model) sendNginx(c *mClient, inst int, cookie, pass, revoke string) mResp {
	return m.nginxFollow(c, inst, cookie, pass, revoke, 0)
}

// nginxFollow is sendNginx: it follows the redirect of a page request
// whose instance let the visitor in since the auth request (another
// instance, or a copy of the cookie taken in meanwhile) as a browser
// does, up to three times (a request of a burst may meet another's
// admission again).
func (m *model) nginxFollow(c *mClient, inst int, cookie, pass, revoke string, depth int) mResp {
	now := m.now()
	resp := mResp{inst: inst}
	if pass != "" && revoke == "" {
		if tk, ok := fronttest.CheckPass(pass, m.name, fronttest.PassSecret, now/1000); ok {
			m.appNginx(inst, c.i, tk)
			resp.outcome, resp.local = mAdmitted, true
			m.mu.Lock()
			m.local++
			m.mu.Unlock()
			return resp
		}
	}
	jar := ""
	if cookie != "" {
		jar = m.name + "=" + cookie
	}
	if pass != "" {
		jar = strings.TrimPrefix(jar+"; "+m.name+"_pass="+pass, "; ")
	}
	hdr := map[string]string{
		"X-Forwarded-Method": http.MethodGet, "X-Forwarded-Uri": "/", "X-Forwarded-Host": "shop.example",
		"X-Forwarded-Proto": "https", "X-Forwarded-For": waitingroom.VisitorAddr, forwardauth.ModeHeader: modeStatus,
	}
	r := waitingroom.AuthRequest(http.MethodGet, "http://127.0.0.1:8081/", hdr, jar)
	if revoke != "" {
		r.Header.Set(waitingroom.CommandHeader, "revoke")
	}
	w := httptest.NewRecorder()
	m.fas[inst].ServeHTTP(w, r)
	if w.Code >= 500 {
		m.t.Errorf("seed %d: auth status %d", m.seed, w.Code)
	}
	set := w.Header().Values("Set-Cookie")
	if w.Code == http.StatusOK {
		set = append(set, w.Header().Values(forwardauth.PassHeader)...)
		m.appNginx(inst, c.i, w.Header().Get(waitingroom.TicketHeader))
		resp.outcome = mAdmitted
	} else {
		// error_page: the page of that decision, from any instance.
		hdr[forwardauth.ModeHeader] = modePage
		hdr[forwardauth.CookieHeader] = strings.Join(set, ", ")
		page := waitingroom.AuthRequest(http.MethodGet, "http://127.0.0.1:8081/", hdr, jar)
		pw := httptest.NewRecorder()
		pinst := m.pickNginx()
		m.fas[pinst].ServeHTTP(pw, page)
		if ps := pw.Header().Values("Set-Cookie"); !slices.Equal(ps, set) {
			// The page's instance decided afresh (the status answer
			// set no cookie): a chance, if any, is its.
			resp.inst, set = pinst, ps
		}
		switch {
		case pw.Code >= 500:
			m.t.Errorf("seed %d: page status %d", m.seed, pw.Code)
		case pw.Code == http.StatusTemporaryRedirect && depth < 3:
			m.mu.Lock()
			m.redirects++
			m.mu.Unlock()
			var jarResp mResp
			m.readSet(&jarResp, set)
			nc, np := cookie, pass
			if jarResp.set != "" || jarResp.cleared {
				nc = jarResp.set
			}
			if jarResp.pass != "" || jarResp.passCleared {
				np = jarResp.pass
			}
			r := m.nginxFollow(c, m.pickNginx(), nc, np, "", depth+1)
			if st := jarResp.state; r.local && jarResp.hasState && st.AcceptedAt > 0 {
				// Passed on a pass the client held from before (a
				// revoked session's, until it expires): the application
				// did not see the session the page let the client into.
				m.mu.Lock()
				m.records = append(m.records, appRecord{inst: pinst, client: c.i, at: now, id: st.ID, acc: st.AcceptedAt, bucket: st.Bucket, unseen: true})
				m.mu.Unlock()
			}
			if r.set == "" && !r.cleared {
				r.set, r.cleared, r.state, r.hasState = jarResp.set, jarResp.cleared, jarResp.state, jarResp.hasState
			}
			return r
		case pw.Code == http.StatusTemporaryRedirect:
			st, _ := m.open(cookie)
			m.t.Errorf("seed %d: redirected four times (client %d %s, cookie %+v, set %q)", m.seed, c.i, c.kind, st, set)
		case pw.Header().Get("Refresh") != "":
			resp.outcome = mWaiting
			secs, err := strconv.Atoi(pw.Header().Get("Refresh"))
			if err != nil || secs < 1 {
				m.t.Errorf("seed %d: Refresh header %q", m.seed, pw.Header().Get("Refresh"))
				secs = 1
			}
			resp.refresh = int64(secs) * 1000
		default:
			resp.outcome = mRejected
		}
		_, _ = io.Copy(io.Discard, pw.Body)
	}
	m.readSet(&resp, set)
	return resp
}

// readSet puts into resp the cookies a browser takes from the Set-Cookie
// lines set, in order.
func (m *model) readSet(resp *mResp, set []string) {
	for _, ck := range (&http.Response{Header: http.Header{"Set-Cookie": set}}).Cookies() {
		switch {
		case ck.Name == m.name && ck.MaxAge < 0:
			resp.cleared, resp.set = true, ""
		case ck.Name == m.name:
			resp.set, resp.cleared = ck.Value, false
		case ck.Name == m.name+"_pass" && ck.MaxAge < 0:
			resp.passCleared, resp.pass = true, ""
		case ck.Name == m.name+"_pass":
			resp.pass, resp.passCleared = ck.Value, false
			m.gavePass(ck.Value)
		}
	}
	if resp.set != "" {
		if st, err := m.open(resp.set); err == nil {
			resp.state, resp.hasState = st, true
		} else {
			m.t.Errorf("seed %d: the room set a cookie it cannot read", m.seed)
		}
	}
}

// pickNginx picks the instance of nginx's next request to the room's
// upstream: from the requests of a burst too, so not from m.rng.
func (m *model) pickNginx() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.nginxRng.IntN(len(m.rooms))
}

// gavePass notes the last second of a pass the room gave.
func (m *model) gavePass(v string) {
	tk, ok := fronttest.CheckPass(v, m.name, fronttest.PassSecret, 0)
	last, read := fronttest.PassLast(v)
	if !ok || !read {
		m.t.Errorf("seed %d: a pass nginx does not read: %q", m.seed, v)
		return
	}
	t, ok := waitingroom.ParseTicket(tk)
	if !ok {
		m.t.Errorf("seed %d: a pass nginx does not read: %q", m.seed, v)
		return
	}
	m.mu.Lock()
	m.passLast[t.ID] = max(m.passLast[t.ID], last)
	m.mu.Unlock()
}

// seenSec is the latest second the room may have seen identity id alive:
// its latest request the application saw, or the end of its latest pass.
func (m *model) seenSec(id uint64, x *mID) int64 {
	s := x.lastApp / 1000
	if m.tc.passes != 0 {
		m.mu.Lock()
		s = max(s, m.passLast[id])
		m.mu.Unlock()
	}
	return s
}

// actKept: a copy of a revoker's cookie and pass, kept from before the
// revoke, sent every quarter to one second until a little after the pass
// has expired; half of them keep what the room sets.
func (m *model) actKept(c *mClient) {
	now := m.now()
	if now >= c.leave {
		c.gone = true
		return
	}
	m.requests++
	cookie, pass := c.fixed, c.fixedPass
	if c.keep {
		cookie, pass = c.jar, c.pass
	}
	r := m.send(c, m.pick(), cookie, pass, "")
	m.keepCookie(c, r)
	if r.hasState {
		// The revoker's place, the same successor for both cookies: a
		// copy, counted waiting where either took a chance, even once
		// this one is let in.
		m.copied[r.state.ID] = true
	}
	m.noteChances([]mResp{r}, false, false, true)
	m.absorb()
	c.next[0] = now + m.ms(250, 1000)
}

// revokedIDs returns the identities the instances refuse as revoked.
func (m *model) revokedIDs() map[uint64]bool {
	ids := map[uint64]bool{}
	for _, rm := range m.rooms {
		for _, id := range waitingroom.RevokedIDs(rm.Room) {
			ids[id] = true
		}
	}
	return ids
}

// learnRevokes accounts for the sessions a burst of revokes from c ended,
// which the instances refuse since (the application got "revoked", not
// the identity): the session of c's cookie, and any a request of the
// burst let in and revoked at once (a request that reaches an instance
// after it revoked the session presents a revoked cookie, which brings a
// new place, its successor identity, let in at once when there is room).
// Each is revoked now: seen through the last second of a pass given up
// to a second from now (when syncs are the caller's, the time a revoke
// takes to reach every instance: revokeReach), it ends the second after
// (passRevoke).
func (m *model) learnRevokes(c *mClient, before map[uint64]bool) {
	m.absorb()
	now := m.now()
	for id := range m.revokedIDs() {
		if before[id] {
			continue
		}
		x := m.ids[id]
		if x == nil {
			x = &mID{first: now, acc: now / 1000 * 1000, acc0: now, bucket: secondOf(now)}
			m.ids[id] = x
			m.firstByM[share.MinuteOf(now)]++
			m.freshRevoked++
		}
		x.lastApp = now
		x.kinds |= 1 << c.kind
		if !x.revoked {
			x.revoked = true
			x.revokeEnd = share.FloorDiv(now+1000+m.passDur, 1000) * 1000
		}
	}
}

// checkPasses: no pass of a revoked session is good past the revoke's
// hold (with the margin of reports on their way between instances): the
// room stops counting the session then.
func (m *model) checkPasses() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, last := range m.passLast {
		if x := m.ids[id]; x != nil && x.revoked && (last+1)*1000 > x.revokeEnd+m.margin && !m.passFailed[id] {
			m.passFailed[id] = true
			m.fail("a pass outlives the revoke's hold", "identity %s: a pass good through %s, the revoke holds the slot until %s",
				m.hexID(id), m.rel((last+1)*1000), m.rel(x.revokeEnd))
		}
	}
}
