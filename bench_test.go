package waitingroom

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/go-waitingroom/waitingroom/store/storetest"
)

var body12 = []byte("hello world\n")

func bareHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body12) })
}

// benchRoom returns a room on a frozen clock (so admitted cookies need no
// re-issue) and a request carrying a cookie that got the given outcome.
func benchRoom(b *testing.B, mutate func(*Config), accept string) (*Room, *http.Request) {
	b.Helper()
	clk := newClock()
	tr := newTestRoomOn(b, clk, memstore.New(), mutate)
	v := &visitor{}
	tr.get(v, accept)
	return tr.Room, v.request(http.MethodGet, accept)
}

func serve(b *testing.B, h http.Handler, r *http.Request) {
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
}

// BenchmarkAdmitted compares a request with a valid admitted cookie through
// the room with the same request to the bare handler.
func BenchmarkAdmitted(b *testing.B) {
	rm, r := benchRoom(b, nil, "")
	b.Run("bare", func(b *testing.B) { serve(b, bareHandler(), r) })
	b.Run("room", func(b *testing.B) { serve(b, rm.Handler(bareHandler()), r) })
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if d, _ := rm.Check(r); d.Outcome != Admitted {
				b.Fatal(d.Outcome)
			}
		}
	})
}

// BenchmarkWaiting measures a waiting visitor refreshing before their
// interval: the page again, no new chance.
func BenchmarkWaiting(b *testing.B) {
	for _, tc := range []struct{ name, accept string }{{"html", ""}, {"json", "application/json"}} {
		b.Run(tc.name, func(b *testing.B) {
			rm, r := benchRoom(b, func(c *Config) { c.QueueAll = true }, tc.accept)
			serve(b, rm.Handler(bareHandler()), r)
		})
	}
}

// BenchmarkNewVisitor measures a first request: a cookie is issued, the
// visitor is admitted (room) or queued (full).
func BenchmarkNewVisitor(b *testing.B) {
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
	}{
		{"admitted", func(c *Config) { c.QueueingMethod = Passthrough }},
		{"queued", func(c *Config) { c.QueueAll = true }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			rm, _ := benchRoom(b, tc.mutate, "")
			h := rm.Handler(bareHandler())
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			serve(b, h, r)
		})
	}
}

// BenchmarkSync measures one sync against the in-memory store with a queue
// of 60 buckets.
func BenchmarkSync(b *testing.B) {
	clk := newClock()
	tr := newTestRoomOn(b, clk, memstore.New(), func(c *Config) { c.QueueAll = true; c.QueueHold = 30 * time.Minute })
	for range 60 {
		for range 20 {
			tr.get(&visitor{}, "")
		}
		clk.Add(time.Minute)
		tr.sync()
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := tr.Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplySync measures the shared-state algorithm alone (what runs
// inside the store's transaction) on a queue of 60 and of 1,440 minutes
// and 10,000 sessions, with a second of one instance's reports: 200
// requests of admitted visitors and 10 admissions.
func BenchmarkApplySync(b *testing.B) {
	for _, buckets := range []int{60, 1440} {
		b.Run(fmt.Sprintf("buckets=%d", buckets), func(b *testing.B) {
			base := storetest.LargeState(buckets)
			enc := store.MarshalState(base)
			now := base.Clock + 1000
			p := syncParams{now: now, id: "instance-0", settings: Settings{QueueingMethod: FIFO, TotalActiveUsers: 10000, NewUsersPerMinute: 2000},
				times: sessionTimes{window: 5 * 60_000, margin: 2000, hold: 5 * 60_000}, waitWindow: 44_000, dueWindow: 27_000, syncInterval: 1000, instanceTTL: 3000}
			p.policy = policy{Settings: p.settings, method: &fifoMethod}
			d := newDelta()
			for i := range 200 { // a second of check-ins at one instance
				d.waiting[cellKey{now/60_000 - int64(i%buckets), now / 10_000}]++
				// and of requests of admitted visitors, and admissions
				x := base.Sessions[i*len(base.Sessions)/200]
				x.Seen = now / 1000
				d.session(x)
				if i%20 == 0 {
					d.session(store.Session{ID: uint64(i)<<32 | 7, Admitted: now / 1000, Seen: now / 1000})
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				st, _ := store.UnmarshalState(enc)
				applySync(st, p, d)
			}
		})
	}
}
