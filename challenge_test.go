package waitingroom

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/challenge"
)

const jsonAccept = "application/json"

// waitingJSON is the template.Data fields a JSON client reads here.
type waitingJSON struct {
	Challenge       string `json:"challenge"`
	ChallengePuzzle string `json:"challengePuzzle"`
	RefreshSeconds  int    `json:"refreshIntervalSeconds"`
}

func readWaiting(t *testing.T, w *httptest.ResponseRecorder) waitingJSON {
	t.Helper()
	var body struct {
		WaitingRoom waitingJSON `json:"waitingRoom"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body), w.Body.String())
	return body.WaitingRoom
}

// getWith sends a JSON request carrying answer in the challenge header.
func (tr *testRoom) getWith(v *visitor, answer string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	r := v.request(http.MethodGet, jsonAccept)
	if answer != "" {
		r.Header.Set(challenge.Header, answer)
	}
	tr.app.ServeHTTP(w, r)
	for _, c := range w.Result().Cookies() {
		v.cookie = c.Name + "=" + c.Value
	}
	return w
}

func solve(t *testing.T, puzzle string) string {
	t.Helper()
	a, err := challenge.Solve(context.Background(), puzzle)
	require.NoError(t, err)
	return a
}

// full fills the room with admitted visitors, so the next one queues.
func (tr *testRoom) fill(n int) {
	for range n {
		v := &visitor{}
		require.True(tr.t, admitted(tr.get(v, "")))
	}
}

func powRoom(t *testing.T, ch challenge.Policy) *testRoom {
	ch.Kind = challenge.PoW
	if ch.Difficulty == 0 {
		ch.Difficulty = 8
	}
	return newTestRoom(t, func(c *Config) {
		c.RefreshInterval = 5 * time.Second
		c.SessionDuration = time.Minute // the room frees up in two
		c.QueueHold = 10 * time.Minute  // and the waiting keep their places
		c.Challenge = &ch
	})
}

// A queued visitor is given a puzzle bound to their cookie; coming back
// without an answer parks them in the infinite queue (the same waiting
// page, never a chance, not counted as waiting) however free the room
// gets, and the answer lets them in.
func TestChallengeInfiniteQueue(t *testing.T) {
	tr := powRoom(t, challenge.Policy{OnFail: challenge.Infinite})
	tr.fill(10)
	v := &visitor{}
	w := tr.getWith(v, "")
	require.True(t, isWaiting(w))
	p := readWaiting(t, w)
	assert.Equal(t, "pow", p.Challenge)
	require.NotEmpty(t, p.ChallengePuzzle)
	assert.Equal(t, uint64(1), tr.Stats().Counters.ChallengesIssued)

	// Room for everyone from now on; the visitor never answers.
	tr.clk.Add(2 * time.Minute)
	tr.sync()
	for range 10 {
		tr.clk.Add(6 * time.Second)
		w = tr.getWith(v, "")
		require.True(t, isWaiting(w), "parked")
		assert.NotEmpty(t, readWaiting(t, w).ChallengePuzzle, "the same page: still the puzzle")
		tr.sync()
	}
	k := tr.Stats().Counters
	assert.Equal(t, uint64(1), k.ChallengesFailed, "once per place")
	assert.Equal(t, uint64(1), k.ChallengesParked)
	assert.Zero(t, tr.syncer.Snapshot().Waiting, "a parked visitor reserves no slot")

	// Solving the latest puzzle lets them in at the next chance.
	a := solve(t, readWaiting(t, w).ChallengePuzzle)
	tr.clk.Add(6 * time.Second)
	assert.True(t, admitted(tr.getWith(v, a)))
	assert.Equal(t, uint64(1), tr.Stats().Counters.ChallengesPassed)
}

// With OnFail log, failing is counted and the visitor queues as usual.
func TestChallengeLogOnly(t *testing.T) {
	tr := powRoom(t, challenge.Policy{})
	tr.fill(10)
	v := &visitor{}
	require.True(t, isWaiting(tr.getWith(v, "")))
	tr.clk.Add(2 * time.Minute)
	tr.sync()
	assert.True(t, admitted(tr.getWith(v, "")), "let in without an answer")
	assert.Equal(t, uint64(1), tr.Stats().Counters.ChallengesFailed)
	assert.Zero(t, tr.Stats().Counters.ChallengesParked)
}

// Visitors let straight in are not challenged (challenge.Queued); with
// challenge.Everyone they are, first held for a short refresh.
func TestChallengeWho(t *testing.T) {
	tr := powRoom(t, challenge.Policy{OnFail: challenge.Infinite})
	assert.True(t, admitted(tr.getWith(&visitor{}, "")))
	assert.Zero(t, tr.Stats().Counters.ChallengesIssued)

	tr = powRoom(t, challenge.Policy{Who: challenge.Everyone, OnFail: challenge.Infinite})
	v := &visitor{}
	w := tr.getWith(v, "")
	require.True(t, isWaiting(w), "held for the challenge though the room is empty")
	assert.Equal(t, "1", w.Header().Get("Refresh"))
	a := solve(t, readWaiting(t, w).ChallengePuzzle)
	tr.clk.Add(2 * time.Second)
	assert.True(t, admitted(tr.getWith(v, a)))
	// Passed once per place: the admitted cookie needs no answer.
	tr.clk.Add(time.Second)
	assert.True(t, admitted(tr.getWith(v, "")))
}

// Every bad answer fails, none makes a 5xx, and a valid one passes: the
// table is the attacks on the proof of work.
func TestChallengeAdversarial(t *testing.T) {
	type setup struct {
		tr     *testRoom
		v      *visitor
		puzzle string
	}
	prepare := func(t *testing.T) setup {
		tr := powRoom(t, challenge.Policy{OnFail: challenge.Infinite, TTL: 5 * time.Minute})
		tr.fill(10)
		v := &visitor{}
		w := tr.getWith(v, "")
		require.True(t, isWaiting(w))
		tr.clk.Add(6 * time.Second)
		return setup{tr, v, readWaiting(t, w).ChallengePuzzle}
	}
	for _, tc := range []struct {
		name   string
		answer func(t *testing.T, s setup) string
		passes bool
	}{
		{"valid", func(t *testing.T, s setup) string { return solve(t, s.puzzle) }, true},
		{"unsolved", func(t *testing.T, s setup) string {
			// A nonce that does not solve it: one in 256 does, at
			// difficulty 8.
			for n := 0; ; n++ {
				if a := s.puzzle + "." + strconv.Itoa(n); sha256.Sum256([]byte(a))[0] != 0 {
					return a
				}
			}
		}, false},
		{"forged seed", func(t *testing.T, s setup) string {
			parts := strings.SplitN(s.puzzle, ".", 2)
			return solve(t, "AAAAAAAAAAAAAAAAAAAAAA."+parts[1])
		}, false},
		{"easier difficulty", func(t *testing.T, s setup) string {
			return solve(t, strings.TrimSuffix(s.puzzle, ".8")+".1")
		}, false},
		{"expired", func(t *testing.T, s setup) string {
			a := solve(t, s.puzzle)
			s.tr.clk.Add(3 * time.Minute) // and two more below
			return a
		}, false},
		{"from the future", func(t *testing.T, s setup) string {
			parts := strings.Split(s.puzzle, ".")
			return solve(t, parts[0]+".99999999999."+parts[2])
		}, false},
		{"transplanted from another cookie", func(t *testing.T, s setup) string {
			other := &visitor{}
			w := s.tr.getWith(other, "")
			return solve(t, readWaiting(t, w).ChallengePuzzle)
		}, false},
		{"for another room", func(t *testing.T, s setup) string {
			// The same keys, another name: its puzzle for this identity.
			c, ok := s.tr.readState(s.v.request(http.MethodGet, ""), s.tr.now())
			require.True(t, ok)
			p, err := challenge.NewPuzzles([][]byte{testKey}, "other")
			require.NoError(t, err)
			return solve(t, p.Issue(c.id, time.UnixMilli(s.tr.now()), 8))
		}, false},
		{"oversized", func(t *testing.T, s setup) string {
			return solve(t, s.puzzle) + strings.Repeat("0", 4096)
		}, false},
		{"garbage", func(t *testing.T, s setup) string { return "\x00..\xff.." }, false},
		{"leading zeros in the difficulty", func(t *testing.T, s setup) string {
			return solve(t, strings.TrimSuffix(s.puzzle, ".8")+".08")
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := prepare(t)
			a := tc.answer(t, s)
			s.tr.clk.Add(2 * time.Minute) // room for everyone, the place held
			s.tr.sync()
			w := s.tr.getWith(s.v, a)
			assert.Less(t, w.Code, 500)
			if tc.passes {
				assert.True(t, admitted(w))
				return
			}
			assert.True(t, isWaiting(w), "parked")
			assert.Zero(t, s.tr.Stats().Counters.ChallengesPassed)
		})
	}
}

// An invalid challenge.Policy (in the Config, an event or a live update)
// or challenge.Verifier is refused with an error wrapping both
// ErrInvalidConfig and challenge.ErrInvalid, which names the field at
// fault. The policy's and the verifier's own bounds are tested in package
// challenge.
func TestChallengeInvalidConfig(t *testing.T) {
	bad := &challenge.Policy{Kind: challenge.PoW, Difficulty: 33}
	clk := newClock()
	start := clk.Now().Truncate(time.Minute).Add(time.Hour)
	for _, tc := range []struct {
		name   string
		mutate func(c *Config)
		field  string
	}{
		{"policy", func(c *Config) { c.Challenge = bad }, "challenge.Policy.Difficulty"},
		{"event's policy", func(c *Config) {
			c.Events = []Event{{Name: "drop", Start: start, End: start.Add(time.Hour), Challenge: bad}}
		}, "challenge.Policy.Difficulty"},
		{"verifier", func(c *Config) {
			c.ChallengeVerifier = &challenge.Verifier{Provider: challenge.Turnstile, SiteKey: "k"}
		}, "challenge.Verifier needs SiteKey and Secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig(clk)
			tc.mutate(&cfg)
			_, err := New(cfg, newMemStore())
			require.ErrorIs(t, err, ErrInvalidConfig)
			assert.ErrorIs(t, err, challenge.ErrInvalid)
			assert.Contains(t, err.Error(), "waitingroom: invalid config: ")
			assert.Contains(t, err.Error(), tc.field)
		})
	}
	t.Run("live", func(t *testing.T) {
		tr := newTestRoom(t, nil)
		err := tr.Update(context.Background(), func(s *Settings) { s.Challenge = bad })
		require.ErrorIs(t, err, ErrInvalidConfig)
		assert.ErrorIs(t, err, challenge.ErrInvalid)
		s := Settings{QueueingMethod: FIFO, TotalActiveUsers: 1, NewUsersPerMinute: 1, Challenge: bad}
		assert.ErrorIs(t, s.Validate(), ErrInvalidConfig)
	})
}

// The challenge is a live setting: Room.Update turns it on for every
// instance, and an event overrides it.
func TestChallengeLive(t *testing.T) {
	clk := newClock()
	st := newMemStore()
	a := newTestRoomOn(t, clk, st, nil)
	b := newTestRoomOn(t, clk, st, nil)
	require.NoError(t, a.Update(context.Background(), func(s *Settings) {
		s.Challenge = &challenge.Policy{Kind: challenge.PoW, Who: challenge.Everyone, Difficulty: 4}
	}))
	b.sync()
	w := b.getWith(&visitor{}, "")
	require.True(t, isWaiting(w))
	assert.Equal(t, "pow", readWaiting(t, w).Challenge)

	off := &challenge.Policy{}
	require.NoError(t, a.Update(context.Background(), func(s *Settings) {
		s.Events = []Event{{Name: "open", Start: clk.Now().Truncate(time.Minute), End: clk.Now().Add(time.Hour).Truncate(time.Minute), Challenge: off}}
	}))
	b.sync()
	w = b.getWith(&visitor{}, "")
	require.True(t, isWaiting(w), "the first visitor waits ahead")
	assert.Empty(t, readWaiting(t, w).Challenge, "the event turns it off")
}

// A parked visitor's page is a waiting page like that of a visitor who has
// not failed: the same status, headers and JSON fields, the puzzle
// included; only the values of the moment differ.
func TestChallengeParkedLooksReal(t *testing.T) {
	tr := powRoom(t, challenge.Policy{OnFail: challenge.Infinite})
	tr.fill(10)
	parked, fresh := &visitor{}, &visitor{}
	require.True(t, isWaiting(tr.getWith(parked, "")))
	tr.clk.Add(6 * time.Second)
	a := tr.getWith(parked, "") // no answer: parked
	b := tr.getWith(fresh, "")  // given the challenge now
	require.Equal(t, uint64(1), tr.Stats().Counters.ChallengesParked)
	assert.Equal(t, b.Code, a.Code)
	keys := func(h http.Header) []string {
		var ks []string
		for k := range h {
			if k != "Set-Cookie" { // a new visitor's first cookie
				ks = append(ks, k)
			}
		}
		return ks
	}
	assert.ElementsMatch(t, keys(b.Header()), keys(a.Header()))
	fields := func(w *httptest.ResponseRecorder) []string {
		var body map[string]map[string]any
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
		var ks []string
		for k := range body["waitingRoom"] {
			ks = append(ks, k)
		}
		return ks
	}
	assert.ElementsMatch(t, fields(b), fields(a))
	assert.Equal(t, readWaiting(t, b).Challenge, readWaiting(t, a).Challenge)
}

// chalQueueRoom is a full room with a proof of work (difficulty 8) whose
// sessions outlast the test, whose places lapse after two minutes, and
// whose visitors refresh every 5 s exactly.
func chalQueueRoom(t *testing.T, ch challenge.Policy) *testRoom {
	ch.Kind, ch.Difficulty = challenge.PoW, 8
	tr := newTestRoom(t, func(c *Config) {
		c.RefreshInterval = 5 * time.Second
		c.RefreshJitter = -1
		c.SessionDuration = 30 * time.Minute
		c.QueueHold = 2 * time.Minute
	})
	tr.fill(10)
	require.NoError(t, tr.Update(context.Background(), func(s *Settings) { s.Challenge = &ch }))
	tr.sync()
	return tr
}

// setTotal sets TotalActiveUsers live and syncs.
func (tr *testRoom) setTotal(n int) {
	tr.t.Helper()
	require.NoError(tr.t, tr.Update(context.Background(), func(s *Settings) { s.TotalActiveUsers = n }))
	tr.sync()
}

// answerOf solves the puzzle of w, if it gives one.
func answerOf(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	if p := readWaiting(t, w).ChallengePuzzle; p != "" {
		return solve(t, p)
	}
	return ""
}

// A client that never answers keeps the first cookie it was given, stays
// away until its place lapsed and resends it, again and again: the new
// place that cookie brings has not passed the challenge either. It is
// never let in, is not counted as waiting, and FIFO keeps no slot for
// its minute: a visitor who arrived a minute after it and answered is let
// in at the first chance after a slot comes free.
func TestChallengeLapsedCookieGetsNoChance(t *testing.T) {
	for _, who := range []challenge.Who{challenge.Queued, challenge.Everyone} {
		t.Run("who "+string(who), func(t *testing.T) {
			tr := chalQueueRoom(t, challenge.Policy{Who: who, OnFail: challenge.Infinite})
			r := &visitor{}
			require.True(t, isWaiting(tr.getWith(r, "")))
			first := r.cookie
			resend := func() *httptest.ResponseRecorder { return tr.getWith(&visitor{cookie: first}, "") }
			tr.clk.Add(3 * time.Minute) // the place lapsed
			for range 12 {              // the resender's new place: a minute older than h's
				require.False(t, admitted(resend()))
				tr.clk.Add(5 * time.Second)
				tr.sync()
			}
			h := &visitor{}
			w := tr.getWith(h, "")
			require.True(t, isWaiting(w))
			for range 3 {
				resend()
				tr.clk.Add(5 * time.Second)
				w = tr.getWith(h, answerOf(t, w))
				require.True(t, isWaiting(w))
				tr.sync()
			}
			assert.Equal(t, 1, tr.Stats().Waiting, "the visitor who answered, not the resender")

			tr.setTotal(11) // a slot comes free
			in, resent := -1, 0
			for step := range 24 {
				tr.clk.Add(5 * time.Second)
				if admitted(resend()) {
					resent++
				}
				if admitted(tr.getWith(h, "")) {
					in = step
					break
				}
				tr.sync()
			}
			assert.Zero(t, resent, "the resender let in")
			assert.Equal(t, 0, in, "the visitor who answered is let in at their first chance")
		})
	}
}

// A parked visitor moves no count: the visitor who answered, in the same
// minute, stays counted as waiting at every chance of both.
func TestChallengeParkedUncountsNobody(t *testing.T) {
	tr := chalQueueRoom(t, challenge.Policy{OnFail: challenge.Infinite})
	p, h := &visitor{}, &visitor{}
	tr.getWith(p, "")
	w := tr.getWith(h, "")
	for i := range 6 {
		tr.clk.Add(5 * time.Second)
		require.True(t, isWaiting(tr.getWith(p, "")))
		w = tr.getWith(h, answerOf(t, w))
		require.True(t, isWaiting(w))
		tr.sync()
		assert.Equal(t, 1, tr.Stats().Waiting, "chance %d", i)
	}
	assert.Equal(t, uint64(1), tr.Stats().Counters.ChallengesParked)
}

// On two instances: a visitor held for the challenge by one (here, the
// challenge was turned on while they waited) and passing it a second
// later at the other counts once, and their next chance at the first
// moves that count.
func TestChallengeCountedOnceAcrossInstances(t *testing.T) {
	clk, st := newClock(), newMemStore()
	mutate := func(c *Config) {
		c.RefreshInterval, c.RefreshJitter = 5*time.Second, -1
		c.SessionDuration = 30 * time.Minute
	}
	a := newTestRoomOn(t, clk, st, mutate)
	b := newTestRoomOn(t, clk, st, mutate)
	a.fill(10)
	a.sync()
	b.sync()
	clk.Set(clk.Now().Truncate(time.Minute).Add(time.Minute)) // at the start of a check-in slot
	v := &visitor{}
	require.True(t, isWaiting(a.getWith(v, "")))
	require.NoError(t, a.Update(context.Background(), func(s *Settings) {
		s.Challenge = &challenge.Policy{Kind: challenge.PoW, Who: challenge.Everyone, OnFail: challenge.Infinite, Difficulty: 8}
	}))
	a.sync()
	b.sync()
	clk.Add(5 * time.Second)
	w := a.getWith(v, "") // held
	clk.Add(time.Second)
	require.True(t, isWaiting(b.getWith(v, answerOf(t, w)))) // passed, counted, in the same slot
	for i := range 4 {
		clk.Add(5 * time.Second)
		require.True(t, isWaiting(a.getWith(v, "")))
		a.sync()
		b.sync()
		assert.Equal(t, 1, b.Stats().Waiting, "chance %d", i)
	}
}

// The challenge's state belongs to the visitor: copies of a waiting
// cookie, a cookie whose place lapsed, or whose session was revoked,
// bring no plain chance. The clients here never answer, and the room
// has room for them all along: none is let in, and each place fails at
// most once.
func TestChallengeStateFollowsVisitor(t *testing.T) {
	for _, tc := range []struct {
		name string
		who  challenge.Who
		// cookie returns the cookie the client resends, once the room
		// has room.
		cookie func(t *testing.T, tr *testRoom, revoking http.Handler) string
	}{
		{"lapsed place", challenge.Queued, func(t *testing.T, tr *testRoom, _ http.Handler) string {
			v := &visitor{}
			require.True(t, isWaiting(tr.getWith(v, "")))
			tr.clk.Add(3 * time.Minute)
			return v.cookie
		}},
		{"lapsed place, everyone", challenge.Everyone, func(t *testing.T, tr *testRoom, _ http.Handler) string {
			v := &visitor{}
			require.True(t, isWaiting(tr.getWith(v, "")))
			tr.clk.Add(3 * time.Minute)
			return v.cookie
		}},
		{"copies of a parked place", challenge.Queued, func(t *testing.T, tr *testRoom, _ http.Handler) string {
			v := &visitor{}
			require.True(t, isWaiting(tr.getWith(v, "")))
			copied := v.cookie
			tr.clk.Add(5 * time.Second)
			require.True(t, isWaiting(tr.getWith(v, "")), "parked")
			return copied
		}},
		{"revoked session", challenge.Queued, func(t *testing.T, tr *testRoom, revoking http.Handler) string {
			v := &visitor{}
			w := tr.getWith(v, "")
			require.True(t, isWaiting(w))
			copied := v.cookie      // taken before the answer
			tr.clk.Add(time.Minute) // the minute's admissions are the fill's
			tr.setTotal(11)
			require.True(t, admitted(tr.getWith(v, answerOf(t, w))))
			rw := httptest.NewRecorder()
			revoking.ServeHTTP(rw, v.request(http.MethodGet, ""))
			require.Equal(t, http.StatusOK, rw.Code)
			tr.clk.Add(time.Second)
			tr.sync()
			return copied
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := chalQueueRoom(t, challenge.Policy{Who: tc.who, OnFail: challenge.Infinite})
			revoking := tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				assert.True(t, Revoke(w))
			}))
			cookie := tc.cookie(t, tr, revoking)
			tr.setTotal(20)
			failed := tr.Stats().Counters.ChallengesFailed
			// Two copies of it: one keeps what the room sets, the other
			// resends it as it was; each takes the chance in turn.
			keeper := &visitor{cookie: cookie}
			for step := range 30 {
				tr.clk.Add(5 * time.Second)
				pair := []*visitor{keeper, {cookie: cookie}}
				if step%2 == 1 {
					pair[0], pair[1] = pair[1], pair[0]
				}
				for _, v := range pair {
					require.False(t, admitted(tr.getWith(v, "")), "step %d", step)
				}
				tr.sync()
			}
			assert.LessOrEqual(t, tr.Stats().Counters.ChallengesFailed-failed, uint64(1), "once per place")
			assert.Zero(t, tr.Stats().Waiting)
		})
	}
}

// A raised difficulty applies at once to the puzzles already given: an
// answer to an easier puzzle than the challenge's Difficulty now is
// neither a pass nor a failure, and the visitor is given a puzzle of the
// current difficulty, back in a second. A rise with the queue (RiseEvery)
// does not make earlier puzzles of the base Difficulty stale.
func TestChallengeRaisedDifficulty(t *testing.T) {
	t.Run("Difficulty raised", func(t *testing.T) {
		tr := chalQueueRoom(t, challenge.Policy{OnFail: challenge.Infinite})
		require.NoError(t, tr.Update(context.Background(), func(s *Settings) {
			s.Challenge = &challenge.Policy{Kind: challenge.PoW, OnFail: challenge.Infinite, Difficulty: 4}
		}))
		tr.sync()
		v := &visitor{}
		w := tr.getWith(v, "")
		require.True(t, strings.HasSuffix(readWaiting(t, w).ChallengePuzzle, ".4"))
		old := answerOf(t, w)
		require.NoError(t, tr.Update(context.Background(), func(s *Settings) {
			s.Challenge = &challenge.Policy{Kind: challenge.PoW, OnFail: challenge.Infinite, Difficulty: 28}
			s.TotalActiveUsers = 20 // room for the visitor
		}))
		tr.clk.Add(time.Minute)
		tr.sync()
		w = tr.getWith(v, old)
		require.True(t, isWaiting(w), "not a pass")
		assert.True(t, strings.HasSuffix(readWaiting(t, w).ChallengePuzzle, ".28"), "a puzzle of the current difficulty")
		assert.Equal(t, "1", w.Header().Get("Refresh"))
		k := tr.Stats().Counters
		assert.Zero(t, k.ChallengesPassed)
		assert.Zero(t, k.ChallengesFailed, "not a failure")
		assert.Zero(t, k.ChallengesParked)
	})
	t.Run("risen with the queue", func(t *testing.T) {
		tr := chalQueueRoom(t, challenge.Policy{RiseEvery: 1}) // Difficulty 8
		v := &visitor{}
		w := tr.getWith(v, "")
		require.True(t, strings.HasSuffix(readWaiting(t, w).ChallengePuzzle, ".8"))
		early := answerOf(t, w)
		for range 8 { // the queue grows
			tr.getWith(&visitor{}, "")
		}
		tr.sync()
		require.GreaterOrEqual(t, tr.Stats().Waiting, 8)
		require.Greater(t, tr.syncer.Snapshot().Settings.Challenge.DifficultyAt(tr.syncer.Snapshot().Waiting), 8)
		tr.clk.Add(5 * time.Second)
		tr.getWith(v, early)
		assert.Equal(t, uint64(1), tr.Stats().Counters.ChallengesPassed)
		assert.Zero(t, tr.Stats().Counters.ChallengesFailed)
	})
}

// The script of a challenge's page writes the answer's cookie with the
// attributes of the visitor cookie but HttpOnly: SameSite=None, Secure and
// Partitioned where the visitor cookie is, so that the answer comes back
// from inside an iframe on another site too.
func TestChallengeAnswerCookieAttributes(t *testing.T) {
	tests := []struct {
		name   string
		cookie CookieOptions
		want   string
	}{
		{"plain HTTP", CookieOptions{}, "; Path=/; SameSite=Lax"},
		{"HTTPS", CookieOptions{Secure: true}, "; Path=/; Secure; SameSite=None; Partitioned"},
		{"domain, path, strict", CookieOptions{Domain: "example.com", Path: "/shop", SameSite: http.SameSiteStrictMode}, "; Path=/shop; Domain=example.com; SameSite=Strict"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ch := challenge.Policy{Kind: challenge.PoW, Difficulty: 8, Who: challenge.Everyone}
			tr := newTestRoom(t, func(c *Config) { c.Cookie, c.Challenge = tc.cookie, &ch })
			w := tr.get(&visitor{}, "")
			require.True(t, isRoomPage(w))
			set := w.Header().Get("Set-Cookie")
			_, attrs, _ := strings.Cut(set, ";")
			assert.Equal(t, tc.want, strings.Replace("; "+strings.TrimSpace(attrs), "; HttpOnly", "", 1), "the visitor cookie's, but HttpOnly")
			js, err := json.Marshal(tc.want)
			require.NoError(t, err)
			assert.Contains(t, w.Body.String(), `,a=`+string(js)+`,r=`, "the answer's attributes")
			if !strings.Contains(tc.want, "Lax") {
				assert.NotContains(t, w.Body.String(), "SameSite=Lax", "nothing hard-coded")
			}
		})
	}
}
