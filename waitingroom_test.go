package waitingroom

import (
	"bytes"
	"context"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNewLeavesCallersConfigAlone holds New to copying its Config: nothing
// the caller's Config reaches (key bytes, events and what they point to,
// bypass rules, trusted proxies) is changed by New, and nothing the caller
// changes there afterwards changes the room.
func TestNewLeavesCallersConfigAlone(t *testing.T) {
	clk := newClock()
	day := clk.Now().Truncate(24 * time.Hour).Add(48 * time.Hour)
	yes, no := true, false
	methods := []string{http.MethodHead}
	cfg := baseConfig(clk)
	cfg.Keys = [][]byte{[]byte(strings.Repeat("k", 32)), append([]byte(nil), testKey...)}
	// Out of order: validation sorts events, which must not sort the
	// caller's slice.
	cfg.Events = []Event{
		{Name: "later", Start: day.Add(3 * time.Hour), End: day.Add(4 * time.Hour), DisableSessionRenewal: &no},
		{Name: "sooner", Start: day.Add(time.Hour), End: day.Add(2 * time.Hour), DisableSessionRenewal: &yes,
			TotalActiveUsers: 5, NewUsersPerMinute: 5, Template: "<p>{{waitTime}}</p>"},
	}
	cfg.Bypass = []Rule{PathPrefix("/static/"), Methods(methods...)}
	cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	cfg.Random = func() float64 { return 0.5 }
	cfg.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusTeapot) }
	want := deepCopy(cfg)

	rm, err := New(cfg, memstore.New())
	require.NoError(t, err)
	defer rm.Close()
	for _, d := range deepDiff("Config", want, cfg) {
		t.Errorf("New changed the caller's %s", d)
	}

	// Everything the room holds now, then the caller scribbles over all
	// the memory their Config reaches.
	require.NoError(t, rm.Sync(context.Background()))
	v := &visitor{}
	r := v.request(http.MethodGet, "")
	d, err := rm.checkRequest(r)
	require.NoError(t, err)
	require.Equal(t, outcomeAdmitted, d.Outcome)
	w := httptest.NewRecorder()
	require.True(t, rm.respond(w, r, d))
	v.cookie = w.Result().Cookies()[0].String()
	roomCfg, roomSettings := deepCopy(rm.cfg), deepCopy(rm.syncer.Snapshot().Settings)
	scribble(reflect.ValueOf(&cfg).Elem())
	methods[0] = http.MethodPost
	require.NotEmpty(t, deepDiff("Config", want, cfg), "the scribbling changed nothing")

	for _, d := range deepDiff("room's Config", roomCfg, rm.cfg) {
		t.Errorf("changing the caller's Config after New changed the %s", d)
	}
	for _, d := range deepDiff("room's Settings", roomSettings, rm.syncer.Snapshot().Settings) {
		t.Errorf("changing the caller's Config after New changed the %s", d)
	}
	d, err = rm.checkRequest(v.request(http.MethodGet, ""))
	require.NoError(t, err)
	assert.Equal(t, outcomeAdmitted, d.Outcome, "the cookie issued before still opens: the room's keys are its own")
}

// deepCopy returns a copy of v that shares no memory its owner can change
// with v: slices, maps and pointers to plain values are copied, all the
// way down. Functions, and pointers to anything else (a *slog.Logger), are
// kept: they are the same thing in the copy.
func deepCopy[T any](v T) T {
	return deepCopyValue(reflect.ValueOf(&v).Elem()).Interface().(T)
}

func deepCopyValue(v reflect.Value) reflect.Value {
	out := reflect.New(v.Type()).Elem()
	switch v.Kind() {
	case reflect.Slice:
		if v.IsNil() {
			return out
		}
		out.Set(reflect.MakeSlice(v.Type(), v.Len(), v.Len()))
		for i := range v.Len() {
			out.Index(i).Set(deepCopyValue(v.Index(i)))
		}
	case reflect.Map:
		if v.IsNil() {
			return out
		}
		out.Set(reflect.MakeMapWithSize(v.Type(), v.Len()))
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(it.Key(), deepCopyValue(it.Value()))
		}
	case reflect.Pointer:
		if v.IsNil() || !plain(v.Type().Elem().Kind()) {
			out.Set(v)
			return out
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(v.Elem())
		out.Set(p)
	case reflect.Struct:
		out.Set(v) // unexported fields by value
		for i := range v.NumField() {
			if out.Field(i).CanSet() {
				out.Field(i).Set(deepCopyValue(v.Field(i)))
			}
		}
	default:
		out.Set(v)
	}
	return out
}

func plain(k reflect.Kind) bool {
	switch k {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.String:
		return true
	}
	return false
}

// deepDiff lists where a and b differ, each as the path of the value and
// the two values: slices, maps and pointers to plain values by content,
// functions and other pointers by identity, unexported fields included.
func deepDiff[T any](name string, a, b T) []string {
	var diffs []string
	walkDiff(name, reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem(), &diffs)
	return diffs
}

func walkDiff(path string, a, b reflect.Value, diffs *[]string) {
	differ := func(x, y any) { *diffs = append(*diffs, fmt.Sprintf("%s: %v, then %v", path, x, y)) }
	switch a.Kind() {
	case reflect.Slice:
		if a.Len() != b.Len() || a.IsNil() != b.IsNil() {
			differ(a.Len(), b.Len())
			return
		}
		if a.Type().Elem().Kind() == reflect.Uint8 {
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				differ(fmt.Sprintf("%q", a.Bytes()), fmt.Sprintf("%q", b.Bytes()))
			}
			return
		}
		for i := range a.Len() {
			walkDiff(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i), diffs)
		}
	case reflect.Map:
		if a.Len() != b.Len() {
			differ(a.Len(), b.Len())
			return
		}
		for it := a.MapRange(); it.Next(); {
			bv := b.MapIndex(it.Key())
			if !bv.IsValid() {
				differ(it.Key(), "missing")
				continue
			}
			walkDiff(fmt.Sprintf("%s[%v]", path, it.Key()), it.Value(), bv, diffs)
		}
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() || !plain(a.Type().Elem().Kind()) {
			if a.Pointer() != b.Pointer() {
				differ(a.Pointer(), b.Pointer())
			}
			return
		}
		walkDiff("*"+path, a.Elem(), b.Elem(), diffs)
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		if a.Pointer() != b.Pointer() {
			differ(a.Pointer(), b.Pointer())
		}
	case reflect.Struct:
		for i := range a.NumField() {
			walkDiff(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i), diffs)
		}
	case reflect.Interface:
		if a.IsNil() != b.IsNil() {
			differ(a.IsNil(), b.IsNil())
		} else if !a.IsNil() {
			walkDiff(path, a.Elem(), b.Elem(), diffs)
		}
	case reflect.Bool:
		if a.Bool() != b.Bool() {
			differ(a.Bool(), b.Bool())
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if a.Int() != b.Int() {
			differ(a.Int(), b.Int())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if a.Uint() != b.Uint() {
			differ(a.Uint(), b.Uint())
		}
	case reflect.Float32, reflect.Float64:
		if a.Float() != b.Float() {
			differ(a.Float(), b.Float())
		}
	case reflect.String:
		if a.String() != b.String() {
			differ(a.String(), b.String())
		}
	case reflect.Array:
		for i := range a.Len() {
			walkDiff(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i), diffs)
		}
	default:
		panic("walkDiff: unhandled kind " + a.Kind().String() + " at " + path)
	}
}

// scribble changes every value v reaches through slices, maps and
// pointers to plain values, as a caller reusing their Config's memory
// would: bytes flipped, strings and numbers changed, booleans negated,
// times moved, networks and rules replaced. v must be settable.
func scribble(v reflect.Value) {
	switch x := v.Addr().Interface().(type) {
	case *time.Time:
		*x = x.Add(time.Hour)
		return
	case *netip.Prefix:
		*x = netip.MustParsePrefix("192.0.2.0/24")
		return
	case *Rule:
		*x = Methods("SCRIBBLED")
		return
	}
	switch v.Kind() {
	case reflect.Slice:
		for i := range v.Len() {
			scribble(v.Index(i))
		}
	case reflect.Pointer:
		if !v.IsNil() && plain(v.Type().Elem().Kind()) {
			scribble(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				scribble(v.Field(i))
			}
		}
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() ^ 0xff)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(v.Float() + 1)
	case reflect.String:
		v.SetString(v.String() + "!")
	}
}

func TestAdmitWhileThereIsRoom(t *testing.T) {
	tr := newTestRoom(t, nil)
	v := &visitor{}
	var got Ticket
	var ok bool
	tr.app = tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok = TicketFrom(w)
		_, _ = w.Write([]byte("app"))
	}))
	w := tr.get(v, "")
	require.True(t, admitted(w))
	require.True(t, ok)
	assert.True(t, tr.clk.Now().Equal(got.AcceptedAt))
	assert.Equal(t, tr.clk.Now().Truncate(time.Second), got.Bucket.UTC())
	require.NotEmpty(t, v.cookie)

	// The cookie lets the visitor back in without a new cookie each time.
	tr.clk.Add(10 * time.Second)
	w = tr.get(v, "")
	assert.True(t, admitted(w))
	assert.Empty(t, w.Result().Cookies(), "the cookie is not re-issued on every request")

	// A minute later it is re-issued, renewing the session.
	tr.clk.Add(time.Minute)
	w = tr.get(v, "")
	assert.True(t, admitted(w))
	assert.Len(t, w.Result().Cookies(), 1)

	_, ok = TicketFrom(httptest.NewRecorder())
	assert.False(t, ok)
}

func TestQueueWhenFull(t *testing.T) {
	tr := newTestRoom(t, func(c *Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 2, 2 })
	for range 2 {
		require.True(t, admitted(tr.get(&visitor{}, "")))
	}
	v := &visitor{}
	w := tr.get(v, "")
	require.True(t, isWaiting(w), w.Body.String())
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
	assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
	refresh := w.Header().Get("Refresh")
	assert.Contains(t, []string{"18", "19", "20", "21", "22"}, refresh, "20 s ± 10 %%")
	assert.Empty(t, w.Header().Get("Retry-After"))
	assert.Contains(t, w.Body.String(), `http-equiv="refresh"`)
	assert.NotEmpty(t, v.cookie, "a waiting visitor gets a cookie with their place")
}

func TestAcceptNegotiation(t *testing.T) {
	for _, tc := range []struct {
		accept             string
		wantJSON, orStrict bool // by default; with StrictJSONAccept
	}{
		{"application/json", true, true},
		{" Application/JSON ", true, true},
		{"application/json, text/plain", true, false},
		{"application/json;q=1", true, false},
		{"application/json, text/html", false, false},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", false, false},
		{"text/html, application/json", false, false},
		{"*/*", false, false},
		{"", false, false},
	} {
		for _, strict := range []bool{false, true} {
			tr := newTestRoom(t, func(c *Config) { c.QueueAll = true; c.Page.StrictJSONAccept = strict })
			w := tr.get(&visitor{}, tc.accept)
			want := tc.wantJSON
			if strict {
				want = tc.orStrict
			}
			assert.Equal(t, want, strings.HasPrefix(w.Header().Get("Content-Type"), "application/json"), "Accept %q, strict %v", tc.accept, strict)
		}
	}
	// Two Accept headers are not exactly one application/json.
	tr := newTestRoom(t, func(c *Config) { c.QueueAll = true; c.Page.StrictJSONAccept = true })
	r := (&visitor{}).request(http.MethodGet, "application/json")
	r.Header.Add("Accept", "application/json")
	w := httptest.NewRecorder()
	tr.app.ServeHTTP(w, r)
	assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
}

// queueInBuckets creates perBucket waiting visitors in each of buckets
// consecutive minutes while the room queues everyone, with everyone
// refreshing every 20 s as the page makes them, then opens the room.
func (tr *testRoom) queueInBuckets(buckets, perBucket int) []*visitor {
	tr.t.Helper()
	var vs []*visitor
	for range buckets {
		for range perBucket {
			v := &visitor{}
			require.True(tr.t, isWaiting(tr.get(v, "")))
			vs = append(vs, v)
		}
		for range 3 {
			tr.clk.Add(20 * time.Second)
			tr.sync()
			for _, v := range vs {
				require.True(tr.t, isWaiting(tr.get(v, "")))
			}
		}
	}
	tr.sync()
	require.NoError(tr.t, tr.Update(context.Background(), func(s *Settings) { s.QueueAll = false }))
	return vs
}

// drain makes every waiting visitor refresh each round (newest first, to
// tempt the room) until all are in, and returns the round each got in.
func (tr *testRoom) drain(vs []*visitor, step time.Duration, rounds int) []int {
	tr.t.Helper()
	got := make([]int, len(vs))
	for i := range got {
		got[i] = -1
	}
	for round := range rounds {
		tr.clk.Add(step)
		tr.sync()
		for i := len(vs) - 1; i >= 0; i-- {
			if got[i] < 0 && admitted(tr.get(vs[i], "")) {
				got[i] = round
			}
		}
	}
	return got
}

func fifoRoom(mutate func(*Config)) func(*Config) {
	return func(c *Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 5, 5
		c.SessionDuration = time.Minute
		c.RefreshJitter = -1
		c.QueueAll = true
		c.QueueHold = 30 * time.Minute
		if mutate != nil {
			mutate(c)
		}
	}
}

func TestFIFOOrderAcrossBuckets(t *testing.T) {
	tr := newTestRoom(t, fifoRoom(nil))
	vs := tr.queueInBuckets(4, 5)
	rounds := tr.drain(vs, 20*time.Second, 30)
	for i := range vs {
		require.GreaterOrEqual(t, rounds[i], 0, "visitor %d never got in", i)
		for j := range vs {
			if i/5 < j/5 {
				assert.LessOrEqual(t, rounds[i], rounds[j], "visitor %d (bucket %d) got in after %d (bucket %d)", i, i/5, j, j/5)
			}
		}
	}
}

func TestRandomIgnoresBuckets(t *testing.T) {
	// One free slot, an older and a newer waiting visitor, and the newer
	// one checks in first. FIFO keeps the slot for the older visitor;
	// random gives it to whoever checks in that the draw holds: a room
	// whose draw holds the newer one (identities, and so the lottery's
	// seeds, from a seeded source: the first of them whose draw does).
	for _, tc := range []struct {
		method      QueueingMethod
		newerGetsIn bool
	}{
		{FIFO, false},
		{Random, true},
	} {
		t.Run(string(tc.method), func(t *testing.T) {
			for seed := uint64(1); ; seed++ {
				require.Less(t, seed, uint64(50), "no room whose draw holds the newer visitor")
				tr := newTestRoom(t, fifoRoom(func(c *Config) {
					c.QueueingMethod = tc.method
					c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
					c.Identities = mrand.New(mrand.NewPCG(seed, 1)).Uint64
				}))
				vs := tr.queueInBuckets(2, 1)
				tr.clk.Add(20 * time.Second)
				tr.sync()
				now := tr.clk.Now().UnixMilli()
				c, ok := tr.readState(vs[1].request(http.MethodGet, ""), now)
				require.True(t, ok)
				if tc.method == Random && !tr.syncer.Snapshot().Drawn(c.id, now, tr.cfg.RefreshInterval.Milliseconds()) {
					continue
				}
				assert.Equal(t, tc.newerGetsIn, admitted(tr.get(vs[1], "")))
				assert.Equal(t, !tc.newerGetsIn, admitted(tr.get(vs[0], "")))
				return
			}
		})
	}
}

func TestMethodSwitchPreservesOrder(t *testing.T) {
	// FIFO → random → FIFO: after the switch back, arrival order holds
	// again for everyone still waiting.
	tr := newTestRoom(t, fifoRoom(nil))
	vs := tr.queueInBuckets(5, 3)
	require.NoError(t, tr.Update(context.Background(), func(s *Settings) { s.QueueingMethod = Random }))
	rounds := tr.drain(vs, 20*time.Second, 2)
	require.NoError(t, tr.Update(context.Background(), func(s *Settings) { s.QueueingMethod = FIFO }))
	var rest []*visitor
	var bucket []int
	for i, r := range rounds {
		if r < 0 {
			rest = append(rest, vs[i])
			bucket = append(bucket, i/3)
		}
	}
	require.NotEmpty(t, rest)
	require.Less(t, len(rest), len(vs), "random let some in")
	after := tr.drain(rest, 20*time.Second, 40)
	for i := range rest {
		require.GreaterOrEqual(t, after[i], 0)
		for j := range rest {
			if bucket[i] < bucket[j] {
				assert.LessOrEqual(t, after[i], after[j], "after switching back to FIFO, arrival order holds")
			}
		}
	}
}

// TestStatsSharesNothing: what Stats returns is the caller's to change;
// writing through it, pointers included, leaves the room as it was.
func TestStatsSharesNothing(t *testing.T) {
	on := true
	start := testclock.Start
	tr := newTestRoom(t, func(c *Config) {
		c.Events = []Event{{Name: "drop", Start: start, End: start.Add(time.Hour), DisableSessionRenewal: &on}}
	})
	s := tr.Stats()
	require.Len(t, s.Settings.Events, 1)
	require.NotNil(t, s.Event)
	*s.Settings.Events[0].DisableSessionRenewal = false
	*s.Event.DisableSessionRenewal = false
	s.Settings.Events[0].Name = "changed"
	again := tr.Stats()
	assert.True(t, *again.Settings.Events[0].DisableSessionRenewal)
	assert.True(t, *again.Event.DisableSessionRenewal)
	assert.Equal(t, "drop", again.Settings.Events[0].Name)
}

// TestAdmittedRequestAllocatesOnce: a request whose cookie is admitted
// costs the room one allocation (the request carrying the ticket, its
// context and the writer watching for a revoke), and deciding it none.
func TestAdmittedRequestAllocatesOnce(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	tr := newTestRoom(t, nil)
	v := &visitor{}
	require.True(t, admitted(tr.get(v, "")))
	tr.get(v, "") // the cookie as it settles, read once
	r := v.request(http.MethodGet, "")
	w := &discardWriter{h: http.Header{}}
	body := []byte("app")
	app := tr.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
	for _, tc := range []struct {
		name string
		max  float64
		do   func()
	}{
		{"check", 0, func() {
			var x visit
			require.NoError(t, tr.check(r, &x))
			require.Equal(t, outcomeAdmitted, x.d.Outcome)
		}},
		{"Handler", 1, func() {
			clear(w.h)
			app.ServeHTTP(w, r)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(200, tc.do)
			assert.LessOrEqual(t, allocs, tc.max)
		})
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
