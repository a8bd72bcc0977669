package waitingroom_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/fronttest"
	"github.com/go-waitingroom/waitingroom/internal/share"
)

// This file holds what a hostile client can send and what must happen to
// it (DESIGN invariant 7): no panic, no 5xx, no place in the queue that the
// client did not earn, no slot, no way to the application past the room.

// hostileRoom is a room in the state where a forged request could do harm:
// a slot is free, but FIFO reserves it for a visitor who arrived a minute
// earlier and kept refreshing (the patient). Anything that is not the
// patient's cookie must leave that slot alone.
type hostileRoom struct {
	*testRoom
	patient   *visitor
	state     waitingroom.CookieState // the patient's cookie
	oldBucket int64                   // the patient's arrival minute
	nowBucket int64                   // the minute of the hostile requests
	reached   atomic.Int64
	handler   http.Handler // the room in front of an application that counts its requests
}

func newHostileRoom(t *testing.T, mutate func(*waitingroom.Config)) *hostileRoom {
	t.Helper()
	tr := newTestRoom(t, func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 10, 1
		c.RefreshJitter = -1 // refresh every 20 s exactly
		c.Page.NegotiateLanguage = true
		c.Bypass = []waitingroom.Rule{waitingroom.PathPrefix("/static/"), mustNetworks(t, "10.0.0.0/8")}
		if mutate != nil {
			mutate(c)
		}
	})
	h := &hostileRoom{testRoom: tr, patient: &visitor{}}
	h.handler = tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h.reached.Add(1)
		_, _ = io.WriteString(w, "app")
	}))
	require.True(t, admitted(tr.get(&visitor{}, "")), "the minute's one admission")
	tr.clk.Add(time.Second)
	require.True(t, isWaiting(tr.get(h.patient, "")))
	h.oldBucket = secondOf(tr.clk.Now().UnixMilli())
	// The patient refreshes at 21 s and 41 s (nothing free: the minute's
	// admission is used) and is due again at 61 s, in the next minute.
	for range 2 {
		tr.clk.Add(20 * time.Second)
		tr.sync()
		require.True(t, isWaiting(tr.get(h.patient, "")))
	}
	tr.clk.Add(20 * time.Second)
	tr.sync()
	h.nowBucket = secondOf(tr.clk.Now().UnixMilli())
	require.Greater(t, h.nowBucket, h.oldBucket)
	require.Equal(t, grant{{Bucket: h.oldBucket, N: 1}}, tr.local.Grant(), "one slot, reserved for the patient's minute")
	var ok bool
	h.state, ok = tr.readState(h.patient.request(http.MethodGet, ""), tr.now())
	require.True(t, ok)
	return h
}

// patientValue is the value of the patient's cookie.
func (h *hostileRoom) patientValue() string {
	_, v, _ := strings.Cut(h.patient.cookie, "=")
	return v
}

// cookie is "name=value" with the room's cookie name.
func (h *hostileRoom) cookie(value string) string { return h.cookieName + "=" + value }

// failingBody fails the test if the room reads it: a queued request's body
// is neither read nor forwarded.
type failingBody struct{ t *testing.T }

func (b failingBody) Read([]byte) (int, error) {
	b.t.Error("the room read the request body")
	return 0, io.ErrUnexpectedEOF
}

func (b failingBody) Close() error { return nil }

// mustNetworks is the rule for the client networks cidrs.
func mustNetworks(t testing.TB, cidrs ...string) waitingroom.Rule {
	r, err := waitingroom.ClientNetworks(cidrs...)
	require.NoError(t, err)
	return r
}

// padded encodes raw in base64 with padding. A length that needs none
// gets a padding quantum anyway, as some encoders write one.
func padded(raw []byte) string {
	v := base64.URLEncoding.EncodeToString(raw)
	if len(raw)%3 == 0 {
		v += "===="
	}
	return v
}

// hostileRequest builds a request; cookies go in one Cookie header each.
func hostileRequest(t *testing.T, method, target string, cookies ...string) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	r.Body = failingBody{t}
	r.ContentLength = 1 << 20
	r.RemoteAddr = "192.0.2.1:4711"
	for _, c := range cookies {
		r.Header.Add("Cookie", c)
	}
	return r
}

// assertGainsNothing sends r through the room and checks that it got no
// slot, no earlier place and no way past the room, and that the patient
// still gets the slot reserved for them.
func (h *hostileRoom) assertGainsNothing(t *testing.T, r *http.Request) {
	t.Helper()
	before := h.Stats().Counters.Admitted
	w := httptest.NewRecorder()
	require.NotPanics(t, func() { h.handler.ServeHTTP(w, r) })
	assert.Less(t, w.Code, 500, "no input makes a 5xx")
	assert.Zero(t, h.reached.Load(), "the request reached the application past the room")
	assert.Equal(t, before, h.Stats().Counters.Admitted, "no admission")
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
	for _, c := range w.Result().Cookies() {
		require.Equal(t, h.cookieName, c.Name, "the room sets only its own cookie")
		s, err := h.open(c.Value)
		require.NoError(t, err)
		assert.Zero(t, s.AcceptedAt, "a new cookie never says admitted")
		assert.GreaterOrEqual(t, s.Bucket, h.nowBucket, "no place earlier than a new arrival's")
	}
	assert.Equal(t, int64(1), h.local.Grant().Total(), "the patient's reserved slot is untouched")
	assert.True(t, admitted(h.get(h.patient, "")), "the patient gets their slot")
}

// flipChar returns v with its i-th base64 character replaced by one whose
// top bit differs, so that the decoded bytes differ too (flipping only the
// unused low bits of the last character would decode to the same bytes).
func flipChar(v string, i int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	b := []byte(v)
	b[i] = alphabet[strings.IndexByte(alphabet, b[i])^0x20]
	return string(b)
}

func TestHostileRequests(t *testing.T) {
	type hostileCase struct {
		name string
		req  func(t *testing.T, h *hostileRoom) *http.Request
	}
	get := func(cookies ...func(h *hostileRoom) string) func(t *testing.T, h *hostileRoom) *http.Request {
		return func(t *testing.T, h *hostileRoom) *http.Request {
			var cs []string
			for _, c := range cookies {
				cs = append(cs, c(h))
			}
			return hostileRequest(t, http.MethodGet, "/checkout", cs...)
		}
	}
	value := func(f func(h *hostileRoom) string) func(h *hostileRoom) string {
		return func(h *hostileRoom) string { return h.cookie(f(h)) }
	}
	literal := func(v string) func(h *hostileRoom) string {
		return func(h *hostileRoom) string { return h.cookie(v) }
	}
	patient := value(func(h *hostileRoom) string { return h.patientValue() })
	// forged is the patient's state, or a better one, sealed by a codec
	// the room must not trust.
	forged := func(name string, key []byte, change func(h *hostileRoom, s *waitingroom.CookieState)) func(h *hostileRoom) string {
		return func(h *hostileRoom) string {
			s := h.state
			if change != nil {
				change(h, &s)
			}
			if name == "" {
				name = h.cookieName
			}
			v, err := waitingroom.SealCookie(name, key, s)
			if err != nil {
				panic(err)
			}
			return h.cookie(v)
		}
	}
	farPast := func(_ *hostileRoom, s *waitingroom.CookieState) { s.Bucket -= 60 * 24 * 365 }
	asAdmitted := func(h *hostileRoom, s *waitingroom.CookieState) {
		now := h.clk.Now().UnixMilli()
		s.AcceptedAt, s.LastCheckIn, s.Refresh = now-time.Second.Milliseconds(), now-time.Second.Milliseconds(), 0
	}

	cases := []hostileCase{
		{"no cookie (control)", get()},
		{"empty value", get(literal(""))},
		{"quoted empty value", get(literal(`""`))},
		{"not base64", get(literal(strings.Repeat("*", 74)))},
		{"not base64, control and non-ASCII", get(literal("\x00\x7f\u00e9\u202e<script>"))},
		{"padded base64", get(value(func(h *hostileRoom) string {
			raw, err := base64.RawURLEncoding.DecodeString(h.patientValue())
			if err != nil {
				panic(err)
			}
			return padded(raw)
		}))},
		{"standard base64 alphabet", get(value(func(h *hostileRoom) string {
			raw, _ := base64.RawURLEncoding.DecodeString(h.patientValue())
			return base64.RawStdEncoding.EncodeToString(append(raw, 0xfb, 0xff)) // '+' and '/'
		}))},
		{"truncated by one", get(value(func(h *hostileRoom) string { v := h.patientValue(); return v[:len(v)-1] }))},
		{"truncated by four", get(value(func(h *hostileRoom) string { v := h.patientValue(); return v[:len(v)-4] }))},
		{"truncated to the nonce", get(value(func(h *hostileRoom) string { return h.patientValue()[:32] }))},
		{"one extra character", get(value(func(h *hostileRoom) string { return h.patientValue() + "A" }))},
		{"oversized, 5 KiB", get(literal(strings.Repeat("A", 5<<10)))},
		{"oversized, the real cookie padded past 4 KiB", get(value(func(h *hostileRoom) string {
			return h.patientValue() + strings.Repeat("A", 4<<10)
		}))},
		{"other room, same key", get(forged("__waitingroom_other", testKey, farPast))},
		{"other cookie name, same key", get(forged("session_launch", testKey, farPast))},
		{"retired or unknown key", get(forged("", otherKey, nil))},
		{"forged bucket a year back, other key", get(forged("", otherKey, farPast))},
		{"forged admission, other key", get(forged("", otherKey, asAdmitted))},
		{"the patient's cookie under another name", func(t *testing.T, h *hostileRoom) *http.Request {
			return hostileRequest(t, http.MethodGet, "/checkout", "__waitingroom_other="+h.patientValue())
		}},
		{"a thousand duplicates before the patient's", get(func(h *hostileRoom) string {
			return strings.Repeat(h.cookie("x")+"; ", 1000) + patient(h)
		})},
		{"duplicates in many headers", func(t *testing.T, h *hostileRoom) *http.Request {
			cs := make([]string, 200)
			for i := range cs {
				cs[i] = fmt.Sprintf("a%d=1; %s", i, h.cookie(fmt.Sprint(i)))
			}
			return hostileRequest(t, http.MethodGet, "/checkout", append(cs, patient(h))...)
		}},
		{"huge Accept and Accept-Language", func(t *testing.T, h *hostileRoom) *http.Request {
			r := hostileRequest(t, http.MethodGet, "/checkout")
			r.Header.Set("Accept", strings.Repeat("application/json;q=0.5, ", 1<<14)+"text/html")
			r.Header.Set("Accept-Language", strings.Repeat("de-DE-x-"+strings.Repeat("a", 100)+";q=0.9, ", 1<<12))
			return r
		}},
		{"malformed Accept and Accept-Language", func(t *testing.T, h *hostileRoom) *http.Request {
			r := hostileRequest(t, http.MethodGet, "/checkout")
			r.Header["Accept"] = []string{";;;,,,=q=", "application/json;q=", "\xff\xfe/*"}
			r.Header["Accept-Language"] = []string{"*;q=-1, ;q=NaN, \xff-\x00, de;q=1e999, ar;q=0.0000001"}
			return r
		}},
		{"invalid UTF-8 path", func(t *testing.T, h *hostileRoom) *http.Request {
			r := hostileRequest(t, http.MethodGet, "/")
			r.URL.Path, r.URL.RawPath = "/\xff\xfe/checkout\x00", ""
			return r
		}},
		{"invalid UTF-8 beside the bypass prefix", func(t *testing.T, h *hostileRoom) *http.Request {
			return hostileRequest(t, http.MethodGet, "/static%FF/../checkout")
		}},
		{"dot segments out of the bypass prefix", func(t *testing.T, h *hostileRoom) *http.Request {
			return hostileRequest(t, http.MethodGet, "/static/../checkout")
		}},
		{"encoded dot segments out of the bypass prefix", func(t *testing.T, h *hostileRoom) *http.Request {
			return hostileRequest(t, http.MethodGet, "/STATIC%2F%2e%2e%2Fcheckout")
		}},
		{"a control character beside dots after the bypass prefix", func(t *testing.T, h *hostileRoom) *http.Request {
			return hostileRequest(t, http.MethodGet, "/static/..%09/checkout")
		}},
		{"overlong UTF-8 dots after the bypass prefix", func(t *testing.T, h *hostileRoom) *http.Request {
			return hostileRequest(t, http.MethodGet, "/static/%C0%AE%C0%AE/checkout")
		}},
		{"dots under NFKC after the bypass prefix", func(t *testing.T, h *hostileRoom) *http.Request {
			return hostileRequest(t, http.MethodGet, "/static/%E2%80%A5/checkout")
		}},
		{"spoofed X-Forwarded-For from a bypassed network", func(t *testing.T, h *hostileRoom) *http.Request {
			r := hostileRequest(t, http.MethodGet, "/checkout")
			r.Header.Set("X-Forwarded-For", "10.0.0.1")
			r.Header.Set("X-Real-Ip", "10.0.0.1")
			return r
		}},
		{"every forwarding header naming a bypass path and network", func(t *testing.T, h *hostileRoom) *http.Request {
			r := hostileRequest(t, http.MethodGet, "/checkout")
			for k, vs := range fronttest.ForgedForwarding {
				r.Header[k] = vs
			}
			return r
		}},
		{"HEAD", func(t *testing.T, h *hostileRoom) *http.Request {
			return hostileRequest(t, http.MethodHead, "/checkout")
		}},
		{"OPTIONS *", func(t *testing.T, h *hostileRoom) *http.Request {
			return hostileRequest(t, http.MethodOptions, "*")
		}},
		{"CONNECT", func(t *testing.T, h *hostileRoom) *http.Request {
			return hostileRequest(t, http.MethodConnect, "example.com:443")
		}},
		{"unknown method", func(t *testing.T, h *hostileRoom) *http.Request { return hostileRequest(t, "BREW", "/checkout") }},
		{"POST with a body", func(t *testing.T, h *hostileRoom) *http.Request {
			r := hostileRequest(t, http.MethodPost, "/checkout", h.cookie("garbage"))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}},
	}
	// Every character of the patient's cookie flipped in turn: nonce,
	// ciphertext and tag.
	n := len(newHostileRoom(t, nil).patientValue())
	for i := range n {
		cases = append(cases, hostileCase{fmt.Sprintf("flipped character %d of %d", i, n), get(value(func(h *hostileRoom) string {
			return flipChar(h.patientValue(), i)
		}))})
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHostileRoom(t, nil)
			h.assertGainsNothing(t, tc.req(t, h))
		})
	}
}

// The same requests through the room's decision alone (check, which
// Handler writes the effect of): the decision is one of the four outcomes
// and never passes.
func TestHostileRequestsCheck(t *testing.T) {
	h := newHostileRoom(t, nil)
	for _, r := range []*http.Request{
		hostileRequest(t, http.MethodGet, "/checkout", h.cookie(flipChar(h.patientValue(), 40))),
		hostileRequest(t, http.MethodGet, "/checkout", h.cookie(strings.Repeat("A", 5<<10))),
		hostileRequest(t, http.MethodConnect, "example.com:443", h.cookie("")),
	} {
		d, err := h.checkRequest(r)
		require.NoError(t, err)
		assert.Equal(t, waitingroom.OutcomeWaiting, d.Outcome)
		assert.False(t, d.Pass)
		assert.Positive(t, d.RefreshAfter)
	}
	assert.Equal(t, int64(1), h.local.Grant().Total())
}

func TestRetiredKey(t *testing.T) {
	// The patient's place, written with a key that is now retired.
	oldKeyCookie := func(h *hostileRoom) *http.Request {
		return hostileRequest(t, http.MethodGet, "/", h.cookie(seal(t, h.cookieName, otherKey, h.state)))
	}
	t.Run("while it is still in the ring, the place holds", func(t *testing.T) {
		h := newHostileRoom(t, func(c *waitingroom.Config) { c.Keys = [][]byte{testKey, otherKey} })
		w := httptest.NewRecorder()
		h.handler.ServeHTTP(w, oldKeyCookie(h))
		assert.Equal(t, "app", w.Body.String(), "a cookie of a previous key still reads")
	})
	t.Run("once dropped, the visitor is new", func(t *testing.T) {
		h := newHostileRoom(t, nil)
		h.assertGainsNothing(t, oldKeyCookie(h))
	})
}

// A visitor saves their queued cookie, gets in, then replays the saved
// cookie. The replay is the visitor it describes, whose place became a
// session: it joins that session, takes no second slot and no place
// earlier than the one it was issued with, and counts once.
func TestReplayedQueuedCookie(t *testing.T) {
	tr := newTestRoom(t, func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
		c.RefreshJitter = -1
	})
	first := &visitor{}
	require.True(t, admitted(tr.get(first, "")))
	tr.clk.Add(time.Second)
	v := &visitor{}
	require.True(t, isWaiting(tr.get(v, "")))
	saved := *v
	bucket := secondOf(tr.clk.Now().UnixMilli())

	// The first visitor's session lapses; v refreshes until admitted.
	var in bool
	for range 30 {
		tr.clk.Add(20 * time.Second)
		tr.sync()
		if in = admitted(tr.get(v, "")); in {
			break
		}
	}
	require.True(t, in)
	admissions := tr.Stats().Counters.Admitted

	for range 5 {
		tr.clk.Add(20 * time.Second)
		tr.sync()
		replay := saved
		tr.get(&replay, "")
		// The replay is the visitor whose place it was: it joins their
		// session, and takes no second slot.
		c, ok := tr.readState(replay.request(http.MethodGet, ""), tr.now())
		require.True(t, ok)
		own, ok := tr.readState(v.request(http.MethodGet, ""), tr.now())
		require.True(t, ok)
		assert.Equal(t, own.ID, c.ID, "the same visitor")
		assert.Equal(t, own.AcceptedAt, c.AcceptedAt, "the same session")
		assert.GreaterOrEqual(t, c.Bucket, bucket, "no earlier place than the one it was issued with")
		assert.True(t, admitted(tr.get(v, "")), "the admitted visitor keeps their one slot")
	}
	assert.Equal(t, admissions, tr.Stats().Counters.Admitted)
	tr.sync()
	assert.Equal(t, 1, tr.Stats().Active, "counted once")
}

// An admitted visitor whose session expired comes back with their cookie:
// they are a new visitor of the current minute, behind the queue, never
// ahead of it because they were once admitted.
func TestExpiredSessionGetsALaterBucket(t *testing.T) {
	for _, renewal := range []bool{true, false} {
		t.Run(fmt.Sprintf("renewal %v", renewal), func(t *testing.T) {
			tr := newTestRoom(t, func(c *waitingroom.Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
				c.RefreshJitter = -1
				c.DisableSessionRenewal = !renewal
				c.QueueHold = 30 * time.Minute
			})
			early := &visitor{}
			require.True(t, admitted(tr.get(early, "")))
			admittedAt := tr.clk.Now().UnixMilli()
			// A queue forms behind them and keeps refreshing; someone else
			// takes the slot as soon as the session lapses.
			var queue []*visitor
			for range 3 {
				v := &visitor{}
				require.True(t, isWaiting(tr.get(v, "")))
				queue = append(queue, v)
			}
			// Without renewal the visitor keeps browsing and is cut off at
			// SessionDuration from admission; with renewal they go idle.
			lost := false
			for range 17 { // 5 min 40 s
				tr.clk.Add(20 * time.Second)
				tr.sync()
				for _, v := range queue {
					tr.get(v, "")
				}
				if !renewal && isWaiting(tr.get(early, "")) {
					lost = true
					break
				}
			}
			if renewal {
				tr.clk.Add(time.Second)
				lost = isWaiting(tr.get(early, ""))
			}
			assert.True(t, lost, "an expired session does not re-enter")
			c, ok := tr.readState(early.request(http.MethodGet, ""), tr.now())
			require.True(t, ok)
			assert.Zero(t, c.AcceptedAt)
			now := tr.clk.Now().UnixMilli()
			assert.Equal(t, secondOf(now), c.Bucket, "a new, later bucket")
			assert.Greater(t, c.Bucket, secondOf(admittedAt))
			tr.sync()
			b := tr.Stats().Buckets
			require.NotEmpty(t, b)
			assert.Less(t, b[0].Bucket.Unix(), c.Bucket, "the ones who waited are ahead")
		})
	}
}

// Cookies whose times lie in the future can only come from the room's own
// key, written under a clock that was wrong (an instance hours ahead, or a
// clock stepped back). They must neither freeze a visitor (a refresh hours
// away) nor elevate one (a session that outlives its duration). What the
// room does: a cookie more than the absorbed clock skew (share.MaxClockLead)
// ahead of the room's clock is invalid, so the visitor is new; one a few
// seconds ahead keeps its place.
func TestFutureTimestamps(t *testing.T) {
	const ahead = 3 * time.Hour
	for _, tc := range []struct {
		name      string
		noRenewal bool
		state     func(now, nowMin int64) waitingroom.CookieState
		keepPlace bool
	}{
		{"queued, last check-in hours ahead", false, func(now, nowMin int64) waitingroom.CookieState {
			return waitingroom.CookieState{Bucket: nowMin - 1, LastCheckIn: now + ahead.Milliseconds(), Refresh: 20_000}
		}, false},
		{"queued, bucket and check-in hours ahead", false, func(now, nowMin int64) waitingroom.CookieState {
			return waitingroom.CookieState{Bucket: secondOf(now + ahead.Milliseconds()), LastCheckIn: now + ahead.Milliseconds(), Refresh: 20_000}
		}, false},
		{"admitted, checked in hours ahead", false, func(now, nowMin int64) waitingroom.CookieState {
			return waitingroom.CookieState{Bucket: nowMin, AcceptedAt: now + ahead.Milliseconds(), LastCheckIn: now + ahead.Milliseconds()}
		}, false},
		{"admitted hours ahead, no renewal", true, func(now, nowMin int64) waitingroom.CookieState {
			return waitingroom.CookieState{Bucket: nowMin, AcceptedAt: now + ahead.Milliseconds(), LastCheckIn: now}
		}, false},
		{"queued, a few seconds ahead (clock skew)", false, func(now, nowMin int64) waitingroom.CookieState {
			return waitingroom.CookieState{Bucket: nowMin - 1, LastCheckIn: now + 5000, Refresh: 20_000}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, func(c *waitingroom.Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
				c.RefreshJitter = -1
				c.DisableSessionRenewal = tc.noRenewal
			})
			require.True(t, admitted(tr.get(&visitor{}, "")), "the room is full")
			tr.clk.Add(30 * time.Second)
			tr.sync()
			now := tr.clk.Now().UnixMilli()
			s := tc.state(now, secondOf(now))
			v := &visitor{cookie: tr.cookieName + "=" + tr.seal(s)}
			admissions := tr.Stats().Counters.Admitted

			d, err := tr.checkRequest(v.request(http.MethodGet, ""))
			require.NoError(t, err)
			assert.NotEqual(t, waitingroom.OutcomeAdmitted, d.Outcome, "a cookie from the future is no admission")
			assert.Equal(t, admissions, tr.Stats().Counters.Admitted)
			if tc.keepPlace {
				assert.Equal(t, waitingroom.OutcomeWaiting, d.Outcome)
				assert.LessOrEqual(t, d.RefreshAfter, 20*time.Second+share.MaxClockLead*time.Millisecond)
				return
			}
			assert.Equal(t, waitingroom.OutcomeWaiting, d.Outcome)
			assert.LessOrEqual(t, d.RefreshAfter, 20*time.Second, "no refresh hours away: the visitor is not frozen")
			require.NotEmpty(t, d.CookieValue, "the visitor gets a new cookie")
			c, err := tr.open(d.CookieValue)
			require.NoError(t, err)
			assert.Equal(t, secondOf(now), c.Bucket, "treated as new")
			assert.Equal(t, now, c.LastCheckIn)
			assert.Zero(t, c.AcceptedAt)

			// Ten minutes on, with the same cookie: still not in.
			tr.clk.Add(10 * time.Minute)
			d, err = tr.checkRequest(v.request(http.MethodGet, ""))
			require.NoError(t, err)
			assert.NotEqual(t, waitingroom.OutcomeAdmitted, d.Outcome)
		})
	}
}

// The shared counts have the same problem as cookies: an instance whose
// clock ran hours ahead counted its visitors at check-in slots hours
// ahead. Once its clock is corrected those counts must not keep the room
// full until that time comes: the cookies behind them no longer open
// (TestFutureTimestamps), so the counts are no one's.
func TestClockCorrectionFreesFutureCounts(t *testing.T) {
	tr := newTestRoom(t, func(c *waitingroom.Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 3, 3 })
	tr.clk.Add(3 * time.Hour) // the clock runs 3 h ahead
	tr.sync()
	for range 3 {
		require.True(t, admitted(tr.get(&visitor{}, "")))
	}
	tr.sync()
	require.Equal(t, 3, tr.Stats().Active)

	tr.clk.Add(-3*time.Hour + 10*time.Minute) // corrected; sessions are 5 minutes
	tr.sync()
	tr.sync()
	assert.Zero(t, tr.Stats().Active, "counts from hours ahead are dropped")
	assert.True(t, admitted(tr.get(&visitor{}, "")), "the room is not full of no one")
}

// A path whose meaning depends on how the application resolves it never
// matches a bypass rule: routers that route the path as sent (gin by
// default, chi and echo on the escaped path) would serve "/api/../static/x"
// from /api/, behind the room's back.
func TestBypassNeedsACanonicalPath(t *testing.T) {
	for _, target := range []string{
		"/api/../static/x",
		"/api/%2e%2e/static/x",
		"/api%2F..%2Fstatic/x",
		"/api/./../static/x",
	} {
		t.Run(target, func(t *testing.T) {
			tr := newTestRoom(t, func(c *waitingroom.Config) {
				c.QueueAll = true
				c.Bypass = []waitingroom.Rule{waitingroom.PathPrefix("/static/")}
			})
			d, err := tr.checkRequest(httptest.NewRequest(http.MethodGet, target, nil))
			require.NoError(t, err)
			assert.NotEqual(t, waitingroom.OutcomeBypassed, d.Outcome)
		})
	}
}

// One visitor refreshes 100 times a second for a minute of virtual time,
// another as the page says. The spammer gets no more chances than the
// polite visitor, no slot before them, and each early refresh costs a
// bounded number of allocations.
func TestRefreshSpam(t *testing.T) {
	tr := newTestRoom(t, func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 10, 1
		c.RefreshJitter = -1
	})
	require.True(t, admitted(tr.get(&visitor{}, "")), "the minute's one admission")
	tr.clk.Add(time.Second)
	polite, spammer := &visitor{}, &visitor{}
	require.True(t, isWaiting(tr.get(polite, "")))
	politeNext := tr.clk.Now().Add(20 * time.Second)
	tr.clk.Add(time.Second)
	require.True(t, isWaiting(tr.get(spammer, "")))

	chances := map[*visitor]int{polite: 1, spammer: 1}
	admittedAt := map[*visitor]time.Time{}
	request := func(v *visitor) {
		before := v.cookie
		w := tr.get(v, "")
		require.Less(t, w.Code, 500)
		if v.cookie != before {
			chances[v]++
		}
		if admitted(w) && admittedAt[v].IsZero() {
			admittedAt[v] = tr.clk.Now()
		}
	}
	start := tr.clk.Now()
	for step := 1; step <= 6000; step++ { // 100 per second for 60 s
		tr.clk.Add(10 * time.Millisecond)
		now := tr.clk.Now()
		if step%100 == 0 {
			tr.sync() // as the background loop would, every second
		}
		if !now.Before(politeNext) && admittedAt[polite].IsZero() {
			request(polite)
			politeNext = now.Add(20 * time.Second)
		}
		if admittedAt[spammer].IsZero() {
			request(spammer)
		}
	}
	require.Equal(t, start.Add(time.Minute), tr.clk.Now())
	assert.LessOrEqual(t, chances[spammer], chances[polite], "refreshing faster gains no chance")
	assert.LessOrEqual(t, chances[spammer], 4, "a chance per refresh interval: at 0, 20, 40 and 60 s")
	assert.False(t, admittedAt[polite].IsZero(), "the polite visitor got the next slot")
	assert.True(t, admittedAt[spammer].IsZero(), "the spammer did not get in before them")
	assert.Equal(t, uint64(2), tr.Stats().Counters.Admitted)

	// An early refresh is a copy of a cached page: a bounded number of
	// allocations, whatever the rate.
	tr.clk.Add(time.Second)
	tr.sync()
	for _, accept := range []string{"", "application/json"} {
		r := spammer.request(http.MethodGet, accept)
		w := &discardWriter{h: http.Header{}}
		allocs := testing.AllocsPerRun(200, func() {
			clear(w.h)
			tr.app.ServeHTTP(w, r)
		})
		t.Logf("%.0f allocations per early refresh (Accept %q)", allocs, accept)
		assert.LessOrEqual(t, allocs, 12.0, "allocations per early refresh (Accept %q)", accept)
		assert.Equal(t, http.StatusOK, w.code)
	}
}

// discardWriter is a ResponseWriter that keeps the status and drops the
// body, so allocation counts are the room's own.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }

// Concurrent visitors, hostile and not, with syncs and setting changes
// alongside: no 5xx, and the limits hold (run with -race).
func TestConcurrentHostileRequests(t *testing.T) {
	const perMinute = 5
	tr := newTestRoom(t, func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = perMinute, perMinute
		c.Page.NegotiateLanguage = true
		c.Bypass = []waitingroom.Rule{waitingroom.PathPrefix("/static/")}
	})
	forged := seal(t, tr.cookieName, otherKey, waitingroom.CookieState{Bucket: 1, AcceptedAt: 1, LastCheckIn: tr.clk.Now().UnixMilli()})
	valid := tr.seal(waitingroom.CookieState{Bucket: secondOf(tr.clk.Now().UnixMilli()), LastCheckIn: tr.clk.Now().UnixMilli(), Refresh: 1})
	inputs := []func(r *http.Request){
		func(r *http.Request) {},
		func(r *http.Request) { r.Header.Set("Cookie", tr.cookieName+"="+forged) },
		func(r *http.Request) { r.Header.Set("Cookie", tr.cookieName+"="+valid) },
		func(r *http.Request) { r.Header.Set("Cookie", tr.cookieName+"="+flipChar(valid, 30)) },
		func(r *http.Request) { r.Header.Set("Accept", "application/json") },
		func(r *http.Request) { r.Header.Set("Accept-Language", "ar, de;q=0.5, *;q=0") },
		func(r *http.Request) { r.Method = http.MethodHead },
		func(r *http.Request) { r.URL.Path = "/static/../x" },
	}
	var (
		wg         sync.WaitGroup
		fails      atomic.Int64
		passed     atomic.Int64
		stop       = make(chan struct{})
		background sync.WaitGroup
	)
	background.Add(1)
	go func() {
		defer background.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_ = tr.Sync(context.Background())
			if i%10 == 0 {
				_ = tr.Update(context.Background(), func(s *waitingroom.Settings) {
					s.QueueingMethod = []waitingroom.QueueingMethod{waitingroom.FIFO, waitingroom.Random}[i/10%2]
				})
			}
			_ = tr.Stats()
		}
	}()
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := &visitor{}
			for i := range 150 {
				r := v.request(http.MethodGet, "")
				r.Body = io.NopCloser(strings.NewReader("body"))
				inputs[(g+i)%len(inputs)](r)
				w := httptest.NewRecorder()
				tr.app.ServeHTTP(w, r)
				if w.Code >= 500 {
					fails.Add(1)
				}
				if w.Body.String() == "app" && r.URL.Path != "/static/x" {
					passed.Add(1)
				}
				for _, c := range w.Result().Cookies() {
					v.cookie = c.Name + "=" + c.Value
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	background.Wait()
	assert.Zero(t, fails.Load(), "no 5xx")
	assert.LessOrEqual(t, tr.Stats().Counters.Admitted, uint64(perMinute), "admissions within the minute's limit")
	assert.Positive(t, passed.Load())
}
