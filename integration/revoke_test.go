package integration

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/forwardauth"
	"github.com/go-waitingroom/waitingroom/internal/servicetest"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
)

// redisClients returns n stores on one Redis, each with a client of its
// own (as n processes would have) and the same random key prefix, whose
// keys are removed when the test ends.
func redisClients(t *testing.T, n int) []store.Store {
	opts, err := redis.ParseURL(servicetest.Redis.URL())
	require.NoError(t, err)
	prefix := "wrrevoke:" + randomSuffix() + ":"
	var sts []store.Store
	for range n {
		client := redis.NewClient(opts)
		if err := client.Ping(context.Background()).Err(); err != nil {
			_ = client.Close()
			servicetest.Unavailable(t, servicetest.Redis, err)
		}
		t.Cleanup(func() { _ = client.Close() })
		sts = append(sts, redisstore.New(client, redisstore.Options{KeyPrefix: prefix}))
	}
	admin := redis.NewClient(opts)
	t.Cleanup(func() {
		keys, _ := admin.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			admin.Del(context.Background(), keys...)
		}
		_ = admin.Close()
	})
	return sts
}

// revokeFleet is three instances of a room on one Redis, syncing in the
// background every SyncInterval on the real clock, in front of an
// application that answers with the ticket's ID; with passes, asked
// through the forward-auth handler as nginx asks it.
type revokeFleet struct {
	t      *testing.T
	passes bool
	st     store.Store // the first instance's
	rooms  []*waitingroom.Room
	hs     []http.Handler
}

// revokeInterval is the fleet's SyncInterval.
const revokeInterval = time.Second

// revokePassDuration is the fleet's Pass.Duration, with passes.
const revokePassDuration = 2 * time.Second

func newRevokeFleet(t *testing.T, passes bool) *revokeFleet {
	f := &revokeFleet{t: t, passes: passes}
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Revoke") != "" {
			w.Header().Set(waitingroom.CommandHeader, "revoke")
		}
		tk, _ := waitingroom.TicketFrom(w)
		_, _ = io.WriteString(w, strconv.FormatUint(tk.ID, 16))
	})
	sts := redisClients(t, 3)
	f.st = sts[0]
	for _, st := range sts {
		cfg := waitingroom.Config{
			Name: "revoke", Settings: waitingroom.Settings{TotalActiveUsers: 1000, NewUsersPerMinute: 1000},
			Keys:         [][]byte{[]byte("0123456789abcdef0123456789abcdef")},
			SyncInterval: revokeInterval,
			Logger:       slog.New(slog.DiscardHandler),
		}
		rm, err := waitingroom.New(cfg, st)
		require.NoError(t, err)
		t.Cleanup(func() { _ = rm.Close() })
		require.NoError(t, rm.Ready(context.Background()))
		h := rm.Handler(app)
		if passes {
			h, err = forwardauth.New(rm, forwardauth.Options{FrontDoor: forwardauth.Forwarded,
				Pass: forwardauth.Pass{Secret: "pass-secret-0123456789abcdef", Duration: revokePassDuration}})
			require.NoError(t, err)
		}
		f.rooms, f.hs = append(f.rooms, rm), append(f.hs, h)
	}
	return f
}

// answer is what instance i answered a request with cookie.
type answer struct {
	id     uint64 // the admitted session's; 0 when not let in
	last   int64  // the last Unix second of the pass given, 0 for none
	cookie string // the cookie set, "name=value", if any
}

// ask sends instance i a request with cookie, revoking the session if
// revoke is set.
func (f *revokeFleet) ask(i int, cookie string, revoke bool) answer {
	r := httptest.NewRequest(http.MethodGet, "http://shop.example/", nil)
	r.Header.Set("Accept", "text/html")
	if cookie != "" {
		r.Header.Set("Cookie", cookie)
	}
	if revoke && f.passes {
		r.Header.Set(waitingroom.CommandHeader, "revoke")
	} else if revoke {
		r.Header.Set("X-Revoke", "1")
	}
	w := httptest.NewRecorder()
	f.hs[i].ServeHTTP(w, r)
	var a answer
	for _, c := range w.Result().Cookies() {
		if c.Name == "__waitingroom_revoke" && c.MaxAge >= 0 {
			a.cookie = c.Name + "=" + c.Value
		}
	}
	if w.Code != http.StatusOK {
		return a
	}
	if f.passes {
		tk, ok := waitingroom.ParseTicket(w.Header().Get(waitingroom.TicketHeader))
		if ok {
			a.id = tk.ID
		}
		if p := w.Header().Get(forwardauth.PassHeader); p != "" {
			v, _, _ := strings.Cut(strings.TrimPrefix(p, "__waitingroom_revoke_pass="), ";")
			if _, rest, ok := strings.Cut(v, "."); ok {
				last, _, _ := strings.Cut(rest, "_")
				a.last, _ = strconv.ParseInt(last, 10, 64)
			}
		}
		return a
	}
	a.id, _ = strconv.ParseUint(w.Body.String(), 16, 64)
	return a
}

// revoked is what the fleet did with one revoked session.
type revoked struct {
	cookie  string
	session uint64
	at      time.Time // the revoke
	open    map[int]bool
	lastLet time.Duration // the latest request another instance let in, after the revoke
	passEnd time.Duration // the end of the latest pass another instance gave, after the revoke
}

// TestRevokeWindowOnRedis: a session revoked at one instance of three on
// Redis, syncing every second, while the others are sent the revoked
// cookie every 5 ms until they refuse it. Without passes, the cookie
// passes elsewhere only until their next sync after the revoke, which
// the revoke reaches at once: within SyncInterval and its tenth (allowed
// 500 ms more for the round trips of a loaded machine). With passes, no
// pass another instance gives is good past the end of the revoke's hold,
// which counts the session until then, and the cookie is let in nowhere
// after that end (500 ms allowed for the requests' own time on a loaded
// machine), which comes at most Pass.Duration after the revoke reached
// every instance. Four (three with passes) sessions are revoked a
// quarter (third) of an interval apart, so that the revokes fall at
// different points of the instances' syncs; the figures are logged.
func TestRevokeWindowOnRedis(t *testing.T) {
	for _, passes := range []bool{false, true} {
		t.Run(map[bool]string{false: "cookie", true: "passes"}[passes], func(t *testing.T) {
			f := newRevokeFleet(t, passes)
			n := 4
			if passes {
				n = 3
			}
			rs := make([]*revoked, n)
			for j := range rs {
				a := f.ask(0, "", false)
				require.NotZero(t, a.id, "admitted")
				rs[j] = &revoked{cookie: a.cookie, session: a.id, open: map[int]bool{1: true, 2: true}}
			}
			// Every instance lets each session in.
			require.Eventually(t, func() bool {
				for _, r := range rs {
					for i := 1; i < 3; i++ {
						if f.ask(i, r.cookie, false).id != r.session {
							return false
						}
					}
				}
				return true
			}, 5*revokeInterval, 10*time.Millisecond)

			start := time.Now()
			deadline := start.Add(revokeInterval + 5*time.Second)
			for left := n; left > 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				for j, r := range rs {
					if r.at.IsZero() && time.Since(start) >= time.Duration(j)*revokeInterval/time.Duration(n) {
						f.ask(0, r.cookie, true)
						r.at = time.Now()
					}
					if r.at.IsZero() {
						continue
					}
					for i := range r.open {
						a := f.ask(i, r.cookie, false)
						since := time.Since(r.at)
						if a.id != r.session {
							delete(r.open, i)
							if len(r.open) == 0 {
								left--
							}
							continue
						}
						r.lastLet = max(r.lastLet, since)
						if a.last != 0 {
							r.passEnd = max(r.passEnd, time.UnixMilli((a.last+1)*1000).Sub(r.at))
						}
					}
				}
			}
			var st store.State
			if passes {
				s, err := f.roomsState()
				require.NoError(t, err)
				st = *s
			}
			var worstLet, worstPass, worstHold time.Duration
			for j, r := range rs {
				require.Empty(t, r.open, "session %d: instances that still let the revoked cookie in", j)
				worstLet = max(worstLet, r.lastLet)
				if !passes {
					continue
				}
				hold := holdOf(t, &st, r)
				worstPass, worstHold = max(worstPass, r.passEnd), max(worstHold, hold)
				assert.LessOrEqual(t, r.passEnd, hold, "session %d: a pass another instance gave is good past the revoke's hold", j)
				assert.LessOrEqual(t, r.lastLet, hold+500*time.Millisecond, "session %d: let in after the revoke's hold", j)
			}
			if !passes {
				t.Logf("cookie: the revoked cookie passed at other instances up to %v after the revoke", worstLet.Round(time.Millisecond))
				assert.LessOrEqual(t, worstLet, revokeInterval+revokeInterval/10+500*time.Millisecond)
				return
			}
			t.Logf("passes (%v): the others' passes good up to %v after the revoke, the cookie let in up to %v; the revoke held the slot %v",
				revokePassDuration, worstPass.Round(time.Millisecond), worstLet.Round(time.Millisecond), worstHold.Round(time.Millisecond))
			// The hold: Pass.Duration after the revoke could have reached
			// every instance, in a fleet syncing through an aggregator as
			// well (two SyncIntervals, a tenth of one and a second), 100 ms
			// allowed for the instances' clocks, which follow the shared
			// one.
			assert.LessOrEqual(t, worstHold, 2*revokeInterval+revokeInterval/10+time.Second+revokePassDuration+100*time.Millisecond)
		})
	}
}

// roomsState reads the room's shared state.
func (f *revokeFleet) roomsState() (*store.State, error) {
	r, ok := f.st.(store.Reader)
	if !ok {
		f.t.Fatal("the store reads no state")
	}
	return r.Read(context.Background(), "revoke")
}

// holdOf returns how long after the revoke r the state's record of its
// session holds the slot: until the record's end.
func holdOf(t *testing.T, st *store.State, r *revoked) time.Duration {
	for _, x := range st.Sessions {
		if x.ID == r.session {
			require.NotZero(t, x.End, "the revoke's record ends")
			return time.UnixMilli(x.End * 1000).Sub(r.at)
		}
	}
	t.Fatalf("no record of the revoked session %x", r.session)
	return 0
}
