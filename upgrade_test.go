package waitingroom

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store"
)

// A rolling upgrade from the previous release (state encoding 2, cookie
// version 1), tested at the format boundary with that release's bytes:
// the state and cookies it wrote (store/testdata, see its README), and
// its own encoder and decoder (prevrelease_test.go) for what this release
// writes for it.

// t0 is the golden files' clock start, in Unix seconds: 15:54:00, minute 0.
var t0 = testclock.Start.Unix()

// rawStore keeps one room's state as bytes, as Redis and SQL stores do,
// so that a test can read and write them as the previous release does.
type rawStore struct {
	mu sync.Mutex
	b  []byte
}

func (s *rawStore) Update(ctx context.Context, _ string, fn func(*store.State) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := store.UnmarshalState(s.b)
	if err != nil {
		st = &store.State{} // lost, as the stores present it
	}
	if err := fn(st); err != nil {
		return err
	}
	s.b = store.MarshalState(st)
	return nil
}

func (s *rawStore) Close() error { return nil }

func (s *rawStore) bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.b...)
}

// prev reads the state as the previous release does; it fails the test
// if that release could not.
func (s *rawStore) prev(t *testing.T) *prevState {
	t.Helper()
	st, err := prevUnmarshalState(s.bytes())
	require.NoError(t, err, "the previous release reads the state")
	return st
}

// current reads the state as this release does.
func (s *rawStore) current(t *testing.T) *store.State {
	t.Helper()
	st, err := store.UnmarshalState(s.bytes())
	require.NoError(t, err)
	return st
}

func goldenState(t *testing.T) []byte {
	b, err := os.ReadFile("store/testdata/state-v2.bin")
	require.NoError(t, err)
	return b
}

// goldenCookies are the visitors' cookies the previous release wrote with
// the golden state, by visitor.
func goldenCookies(t *testing.T) map[string]string {
	b, err := os.ReadFile("store/testdata/cookies-v1.json")
	require.NoError(t, err)
	var m map[string]string
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// upgradeRoom is a room of this release configured as the golden files'
// room, on a virtual clock that syncs when told.
type upgradeRoom struct {
	*Room
	t   *testing.T
	clk *testclock.Clock
	app http.Handler
}

func newUpgradeRoom(t *testing.T, clk *testclock.Clock, st store.Store) *upgradeRoom {
	rm, err := New(Config{
		Name:              "launch",
		TotalActiveUsers:  10,
		NewUsersPerMinute: 3,
		Keys:              [][]byte{testKey},
		SyncInterval:      -1,
		Now:               clk.Now,
		Random:            func() float64 { return 0.5 },
		Logger:            slog.New(slog.DiscardHandler),
	}, st)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rm.Close() })
	return &upgradeRoom{Room: rm, t: t, clk: clk, app: rm.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "app")
	}))}
}

func (ur *upgradeRoom) sync() {
	ur.t.Helper()
	require.NoError(ur.t, ur.Sync(context.Background()))
}

// get sends a request with the cookie value c ("" for none) and returns
// whether it reached the application, and the cookie value the visitor
// holds after it.
func (ur *upgradeRoom) get(c string) (bool, string) {
	ur.t.Helper()
	r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	if c != "" {
		r.Header.Set("Cookie", ur.cookieName+"="+c)
	}
	w := httptest.NewRecorder()
	ur.app.ServeHTTP(w, r)
	for _, k := range w.Result().Cookies() {
		if k.Name == ur.cookieName {
			c = k.Value
		}
	}
	return w.Code == http.StatusOK && w.Body.String() == "app", c
}

// at sets the clock to t0 plus d.
func (ur *upgradeRoom) at(d time.Duration) { ur.clk.Set(testclock.Start.Add(d)) }

// prevInstance plays an instance of the previous release at the format
// boundary: it reads and writes the shared state with that release's
// encoding, counts what its requests do as that release's Check did (an
// admission at its second and in its minute, a re-issue of an admitted
// cookie moving the count to the new second, a revoke taking it away),
// and opens and writes cookies with that release's codec. It does not
// decide who gets in: the tests say what its requests do.
type prevInstance struct {
	id       string
	codec    *codec
	active   map[int64]int64 // second → change
	admitted map[int64]int64 // minute → admissions
	seq      uint64
}

func newPrevInstance(t *testing.T, id string) *prevInstance {
	return &prevInstance{id: id, codec: mustCodec(t, "__waitingroom_launch", testKey),
		active: map[int64]int64{}, admitted: map[int64]int64{}}
}

// admit lets a visitor of bucket b in at now (Unix ms) and returns their
// cookie.
func (o *prevInstance) admit(b, now int64) string {
	o.active[floorDiv(now, 1000)]++
	o.admitted[minuteOf(now)]++
	return prevEncodeCookie(o.codec, prevCookie{bucket: b, acceptedAt: now, lastCheckIn: now})
}

// reissue re-issues an admitted visitor's cookie at now, as the previous
// release does once it is a minute old, and returns it.
func (o *prevInstance) reissue(t *testing.T, cookie string, now int64) string {
	t.Helper()
	c, err := prevDecodeCookie(o.codec, cookie)
	require.NoError(t, err, "the previous release opens the cookie")
	require.Positive(t, c.acceptedAt, "an admitted cookie")
	o.active[floorDiv(c.lastCheckIn, 1000)]--
	o.active[floorDiv(now, 1000)]++
	c.lastCheckIn = now
	return prevEncodeCookie(o.codec, c)
}

// sync applies the instance's counts to the state as the previous
// release's sync does: merged, those that no longer count dropped (its
// session window: 5 minutes), silent instances dropped, its own record
// renewed.
func (o *prevInstance) sync(t *testing.T, st *rawStore, now int64) {
	t.Helper()
	s := st.prev(t)
	const window, ttl = 300_000, 3_000
	by := map[int64]int64{}
	for _, c := range s.Active {
		by[c.Key] += c.N
	}
	for k, n := range o.active {
		by[k] += n
	}
	s.Active = s.Active[:0]
	for k, n := range by {
		if n != 0 && (k+1)*1000+window > now && k <= floorDiv(now+maxClockLead, 1000) {
			s.Active = append(s.Active, store.Count{Key: k, N: n})
		}
	}
	sortCounts(s.Active)
	by = map[int64]int64{}
	for _, c := range s.Admitted {
		by[c.Key] += c.N
	}
	for k, n := range o.admitted {
		by[k] += n
	}
	s.Admitted = s.Admitted[:0]
	for k, n := range by {
		if n != 0 && k > minuteOf(now)-historyMinutes {
			s.Admitted = append(s.Admitted, store.Count{Key: k, N: n})
		}
	}
	sortCounts(s.Admitted)
	o.seq++
	ins := s.Instances[:0]
	self := false
	for _, in := range s.Instances {
		if in.ID == o.id {
			in.Seen, in.Seq, self = now, o.seq, true
		} else if in.Seen+ttl < now {
			continue
		}
		ins = append(ins, in)
	}
	if !self {
		ins = append(ins, store.Instance{ID: o.id, Seen: now, Seq: o.seq})
	}
	s.Instances = ins
	s.Version++
	s.Clock = max(s.Clock, now)
	st.mu.Lock()
	st.b = prevMarshalState(s)
	st.mu.Unlock()
	clear(o.active)
	clear(o.admitted)
}

func sortCounts(cs []store.Count) {
	for i := range cs {
		for j := i + 1; j < len(cs); j++ {
			if cs[j].Key < cs[i].Key {
				cs[i], cs[j] = cs[j], cs[i]
			}
		}
	}
}

// prevActive is the number of active visitors the previous release counts
// in s at now (Unix ms), and by second.
func prevActive(s *prevState, now int64) (int64, map[int64]int64) {
	var n int64
	by := map[int64]int64{}
	for _, c := range s.Active {
		if (c.Key+1)*1000+300_000 > now {
			n += c.N
			by[c.Key] += c.N
		}
	}
	return n, by
}

func prevAdmitted(s *prevState, minute int64) int64 {
	for _, c := range s.Admitted {
		if c.Key == minute {
			return c.N
		}
	}
	return 0
}

// The previous release's state, once its instance is gone: this release
// reads it, admits at once (no grace: nothing was lost), counts the
// previous release's active visitors as long as that release would have,
// keeps the order of its queue, and its visitors' cookies keep their
// places and sessions.
func TestUpgradeFromPreviousState(t *testing.T) {
	st := &rawStore{b: goldenState(t)}
	cookies := goldenCookies(t)
	// The previous release's instance last synced at 72 s: at 76 s it is
	// past its TTL (3 s).
	clk := testclock.New(testclock.Start.Add(76 * time.Second))
	// It had used its grant and reported it before it stopped. (A slot
	// it still held would count as admitted when it is dropped, as in
	// TestUpgradeMixedFleet.)
	prev := st.prev(t)
	prev.Instances[0].Grant = 0
	st.b = prevMarshalState(prev)
	ur := newUpgradeRoom(t, clk, st)
	ur.sync()

	s := ur.Stats()
	assert.Equal(t, 3, s.Active, "a1, a2 and a3, counted by second")
	assert.Equal(t, 6, s.Waiting, "a4, a5 and a6 in minute 0, b1, b2 and b3 in minute 1")
	assert.Equal(t, 1, s.Instances)
	cur := st.current(t)
	assert.Zero(t, cur.Grace, "no grace: nothing was lost")
	assert.Equal(t, byte(store.EncodingVersion), st.bytes()[0], "alone, this release writes its own encoding")
	assert.Len(t, cur.Sessions, 3, "the counts carry over as legacy records")

	// The minute's admissions are minute 0's: a newcomer waits, a5 (who
	// waited since minute 0 and came back when told) gets in, and so does
	// a6: the minute's three slots cover minute 0's three visitors, who
	// race for nothing, so they are not paced.
	in, fresh := ur.get("")
	assert.False(t, in, "a newcomer waits behind minute 0")
	c, err := ur.codec.decode(fresh)
	require.NoError(t, err)
	assert.False(t, c.legacy, "alone, this release writes its own cookies")
	in, a5 := ur.get(cookies["a5"])
	assert.True(t, in, "a5 kept their place")
	c, err = ur.codec.decode(a5)
	require.NoError(t, err)
	assert.Equal(t, t0/60, c.bucket)
	in, _ = ur.get(cookies["a6"])
	assert.True(t, in, "a6 kept their place")
	in, b1 := ur.get(cookies["b1"])
	assert.False(t, in, "minute 1 waits behind minute 0")
	c, err = ur.codec.decode(b1)
	require.NoError(t, err)
	assert.Equal(t, t0/60+1, c.bucket, "b1 kept their place in minute 1")

	// Admitted cookies stay admitted; their counts by second become
	// their session records, not new admissions.
	ur.at(77 * time.Second)
	for _, name := range []string{"a1", "a2"} {
		in, v := ur.get(cookies[name])
		assert.True(t, in, "%s stays admitted", name)
		c, err := ur.codec.decode(v)
		require.NoError(t, err)
		assert.Equal(t, t0*1000, c.acceptedAt)
	}
	ur.at(78 * time.Second)
	ur.sync()
	s = ur.Stats()
	assert.Equal(t, 5, s.Active, "a1, a2 and a3 once each, a5 and a6")
	assert.Equal(t, 2, s.AdmittedThisMinute, "a5 and a6 only")

	// a3 never came back: the previous release counted them until 5
	// minutes after 0 s (the second's end and the session), so does
	// this one.
	ur.at(300*time.Second + 500*time.Millisecond)
	ur.sync()
	assert.Equal(t, 5, ur.Stats().Active)
	ur.at(301 * time.Second)
	ur.sync()
	assert.Equal(t, 4, ur.Stats().Active, "a3's count ended")
}

// The previous release's state, while its instance still runs: this
// release writes what that release reads (state encoding 2, cookies of
// version 1) and counts as it does, so that each counts the other's
// visitors and a visitor's requests can land on either; once that
// instance is gone, this release writes its own formats, and what was
// counted by second is counted once.
func TestUpgradeMixedFleet(t *testing.T) {
	st := &rawStore{b: goldenState(t)}
	cookies := goldenCookies(t)
	prevID := st.current(t).Instances[0].ID
	old := newPrevInstance(t, prevID)
	clk := testclock.New(testclock.Start.Add(73 * time.Second))
	ur := newUpgradeRoom(t, clk, st)
	ms := func() int64 { return clk.Now().UnixMilli() }
	// tick moves the clock to d a second at a time, both instances
	// syncing every second (the previous one unless it stopped).
	oldRuns := true
	tick := func(d time.Duration) {
		for next := clk.Now().Add(time.Second); !next.After(testclock.Start.Add(d)); next = next.Add(time.Second) {
			clk.Set(next)
			if oldRuns {
				old.sync(t, st, ms())
			}
			ur.sync()
		}
	}
	ur.sync()

	// What this release writes, the previous one reads: its own instance
	// kept, this one's ID carrying the formats it reads.
	p := st.prev(t)
	assert.Equal(t, byte(store.PreviousEncoding), st.bytes()[0])
	assert.Zero(t, p.Grace, "no grace: nothing was lost")
	require.Len(t, p.Instances, 2)
	assert.Equal(t, prevID, p.Instances[0].ID)
	assert.True(t, strings.HasSuffix(p.Instances[1].ID, "+s4c3p1"), p.Instances[1].ID)
	n, _ := prevActive(p, ms())
	assert.Equal(t, int64(3), n)
	assert.Equal(t, 3, ur.Stats().Active)

	// a5 gets in here; the previous release opens the cookie as an
	// admitted one, and counts the admission and the visitor.
	in, a5 := ur.get(cookies["a5"])
	require.True(t, in)
	pc, err := prevDecodeCookie(old.codec, a5)
	require.NoError(t, err, "the previous release opens it")
	assert.Equal(t, ms(), pc.acceptedAt)
	assert.Equal(t, t0/60, pc.bucket)
	in, fresh := ur.get("")
	require.False(t, in)
	pc, err = prevDecodeCookie(old.codec, fresh)
	require.NoError(t, err, "the previous release opens a waiting cookie written here")
	assert.Equal(t, t0/60+1, pc.bucket)
	tick(74 * time.Second)
	p = st.prev(t)
	n, by := prevActive(p, ms())
	assert.Equal(t, int64(4), n)
	assert.Equal(t, int64(1), by[t0+73], "a5, at the second of their admission")
	assert.Equal(t, int64(1), prevAdmitted(p, t0/60+1))

	// The previous release lets someone in: counted here too.
	z := old.admit(t0/60+1, ms())
	tick(75 * time.Second)
	assert.Equal(t, 5, ur.Stats().Active)
	assert.Equal(t, 2, ur.Stats().AdmittedThisMinute)

	// a2's cookie (the previous release's, counted at 0 s) re-issued
	// here: the count moves to the re-issue's second, as that release
	// moves it, and the visitor keeps their identity.
	tick(80 * time.Second)
	in, a2 := ur.get(cookies["a2"])
	require.True(t, in)
	pc, err = prevDecodeCookie(old.codec, a2)
	require.NoError(t, err)
	assert.Equal(t, ms(), pc.lastCheckIn)
	before, err := ur.codec.decode(cookies["a2"])
	require.NoError(t, err)
	after, err := ur.codec.decode(a2)
	require.NoError(t, err)
	assert.Equal(t, before.id, after.id, "the identity rides in the nonce")
	tick(81 * time.Second)
	n, by = prevActive(st.prev(t), ms())
	assert.Equal(t, int64(5), n)
	assert.Equal(t, int64(1), by[t0], "a3 only")
	assert.Equal(t, int64(1), by[t0+80], "a2")

	// a5's cookie re-issued by the previous release a minute on: moved,
	// not added.
	tick(134 * time.Second)
	a5 = old.reissue(t, a5, ms())
	tick(135 * time.Second)
	n, by = prevActive(st.prev(t), ms())
	assert.Equal(t, int64(5), n)
	assert.Equal(t, int64(1), by[t0+134])
	assert.Equal(t, 5, ur.Stats().Active)

	// A revoke here takes the count away, as the previous release does.
	rv := ur.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set(CommandHeader, "revoke")
	}))
	r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	r.Header.Set("Cookie", ur.cookieName+"="+z)
	rv.ServeHTTP(httptest.NewRecorder(), r)
	tick(136 * time.Second)
	n, _ = prevActive(st.prev(t), ms())
	assert.Equal(t, int64(4), n, "z revoked")
	assert.Equal(t, 4, ur.Stats().Active)

	// The previous release's instance stops. Once it is past its TTL,
	// this release writes its own formats; the counts by second carry
	// over.
	oldRuns = false
	tick(139 * time.Second)
	assert.Equal(t, byte(store.PreviousEncoding), st.bytes()[0], "within the TTL, still live")
	tick(140 * time.Second)
	assert.Equal(t, byte(store.EncodingVersion), st.bytes()[0])
	// Dropped, it did not say whether it let anyone in from the slot
	// it held: that slot counts as an admission, and as active for a
	// session (lostToSilence).
	assert.Equal(t, 5, ur.Stats().Active, "a1, a2, a3, a5 and the slot the stopped instance held")

	// Cookies of version 1 still counted by second are converted once:
	// no visitor counted twice, no admission counted again. Re-issued,
	// they are of version 2 again.
	admitted := ur.Stats().AdmittedThisMinute
	for _, c := range []string{a5, a2, cookies["a1"], a5, a2} {
		in, _ := ur.get(c)
		assert.True(t, in)
	}
	_, a1 := ur.get(cookies["a1"])
	require.NotEqual(t, cookies["a1"], a1, "re-issued")
	_, err = prevDecodeCookie(old.codec, a1)
	require.Error(t, err, "cookies of version 2 again")
	tick(141 * time.Second)
	assert.Equal(t, 5, ur.Stats().Active, "a1, a2, a3, a5, the stopped instance's slot")
	assert.Equal(t, admitted, ur.Stats().AdmittedThisMinute)
	tick(142 * time.Second)
	cur := st.current(t)
	legacy := 0
	for _, x := range cur.Sessions {
		if x.ID >= store.MinLegacyID {
			legacy++
		}
	}
	assert.Equal(t, 1, legacy, "a3's count by second is left")
}

// While the state is counted by second, the holder of a copy of a waiting
// cookie whose place became a session here joins it, and is counted as
// the previous release counts a copy: once more, at the second of the
// cookie they get, with no new admission.
func TestUpgradeJoinCountedBySecond(t *testing.T) {
	st := &rawStore{b: goldenState(t)}
	cookies := goldenCookies(t)
	old := newPrevInstance(t, st.current(t).Instances[0].ID)
	clk := testclock.New(testclock.Start.Add(73 * time.Second))
	ur := newUpgradeRoom(t, clk, st)
	ur.sync()
	in, _ := ur.get(cookies["a5"])
	require.True(t, in)
	clk.Set(testclock.Start.Add(74 * time.Second))
	in, copied := ur.get(cookies["a5"])
	require.True(t, in, "the copy's holder joins the session")
	pc, err := prevDecodeCookie(old.codec, copied)
	require.NoError(t, err)
	assert.Equal(t, (t0+73)*1000, pc.acceptedAt)
	old.sync(t, st, clk.Now().UnixMilli())
	ur.sync()
	p := st.prev(t)
	n, by := prevActive(p, clk.Now().UnixMilli())
	assert.Equal(t, int64(5), n)
	assert.Equal(t, int64(1), by[t0+73])
	assert.Equal(t, int64(1), by[t0+74])
	assert.Equal(t, int64(1), prevAdmitted(p, t0/60+1), "one admission")
}

func TestFormatsOfInstance(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want formats
	}{
		{"26cb55e96a0e43dd", formats{2, 1, 0}},
		{"26cb55e96a0e43dd+s3c2", formats{3, 2, 0}},
		{"x+s4c3", formats{4, 3, 0}},
		{"x+c3s4", formats{4, 3, 0}},
		{"x+s12c7z9", formats{12, 7, 0}},
		{"x+s4c3p1", formats{4, 3, 1}},
		{"x+s4c3p1f1", formats{4, 3, 1}},
		{"x+p2s5c3", formats{5, 3, 2}},
		{"x+s3", formats{3, 1, 0}},
		{"x+", formats{2, 1, 0}},
		{"a+b+s3c2", formats{3, 2, 0}},
		{"x+sc2", formats{2, 2, 0}},
		{"x+s99999999999999999999c2", formats{2, 2, 0}},
	} {
		assert.Equal(t, tc.want, readsOf(tc.id), tc.id)
	}
	assert.Equal(t, currentFormats, readsOf(instanceID(false)))
	assert.Regexp(t, `^[0-9a-f]{16}\+s4c3p1$`, instanceID(false))
	assert.Regexp(t, `^[0-9a-f]{16}\+s4c3p1f1$`, instanceID(true))
	assert.True(t, fleetCapable(instanceID(true)))
	assert.False(t, fleetCapable(instanceID(false)))
}

func TestWriteFormats(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ids      []string
		current  bool
		cookie   int
		encoding int
		passes   bool
	}{
		{"alone", []string{"a+s4c3p1"}, true, 3, 0, true},
		{"all current", []string{"a+s4c3p1", "b+s4c3p1f1"}, true, 3, 0, true},
		{"a later release", []string{"a+s4c3p1", "b+s5c4p2"}, true, 3, 0, true},
		{"the release before passes", []string{"a+s4c3p1", "b+s4c3"}, true, 3, 0, false},
		{"the release before challenges", []string{"a+s4c3", "b+s4c2"}, true, 2, 0, false},
		{"the release before kept history", []string{"a+s4c3", "b+s3c2"}, true, 2, store.SessionsEncoding, false},
		{"the previous release", []string{"a+s4c3", "b"}, false, 1, store.PreviousEncoding, false},
		{"an older cookie", []string{"a+s4c3", "b+s4c1"}, false, 1, store.PreviousEncoding, false},
		{"an older state", []string{"a+s4c3", "b+s2c2"}, false, 1, store.PreviousEncoding, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &store.State{Encoding: 7}
			for _, id := range tc.ids {
				st.Instances = append(st.Instances, store.Instance{ID: id})
			}
			current, cookie, passes := writeFormats(st)
			assert.Equal(t, tc.current, current)
			assert.Equal(t, tc.passes, passes)
			assert.Equal(t, tc.cookie, cookie)
			assert.Equal(t, tc.encoding, st.Encoding)
		})
	}
}

// The counts by second of a delta apply to the legacy records: moved,
// never below zero, and a converted session takes one's place only if the
// state did not have it.
func TestApplyLegacy(t *testing.T) {
	const l = store.MinLegacyID
	st := &store.State{Sessions: []store.Session{
		{ID: 5, Admitted: 100, Seen: 140},
		{ID: l, Admitted: 100, Seen: 100},
		{ID: l + 1, Admitted: 100, Seen: 100},
		{ID: l + 2, Admitted: 120, Seen: 120},
	}}
	d := newDelta()
	d.legacy.count(100, -1)
	d.legacy.count(150, 1)
	d.legacy.count(120, -3) // below zero: none
	d.legacy.admit(2)
	d.legacy.convert(5, 100) // known: nothing converts
	d.legacy.convert(9, 100) // new: one at 100 is this one
	d.legacy.convert(9, 90)  // the latest second wins
	d.legacy.convert(10, 170)
	admitted := map[int64]int64{}
	applyLegacy(st, d, admitted)
	assert.Equal(t, map[int64]int64{2: 1}, admitted)
	assert.Equal(t, []store.Session{
		{ID: 5, Admitted: 100, Seen: 140},
		{ID: l, Admitted: 150, Seen: 150},
	}, st.Sessions)
	assert.True(t, d.legacy.converts(9))
	assert.False(t, d.legacy.converts(11))
}
