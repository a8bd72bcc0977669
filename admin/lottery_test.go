package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/admin"
	"github.com/go-waitingroom/waitingroom/lottery"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// The status shows the next hour's commitment before it starts, the
// same commitment while it runs, never its seed; and once the hour and
// the draws held after it are over, the seed, which matches it.
func TestStatusLottery(t *testing.T) {
	clk := newAdminClock()
	f := newAdminFixture(t, clk, memstore.New(), nil)
	lot := func() (current, next, revealed *lottery.Record) {
		b, err := json.Marshal(f.getJSON("/status")["lottery"])
		require.NoError(t, err)
		var l struct{ Current, Next, Revealed *lottery.Record }
		require.NoError(t, json.Unmarshal(b, &l))
		return l.Current, l.Next, l.Revealed
	}

	c, n, r := lot()
	assert.Nil(t, c, "before the first sync")
	assert.Nil(t, n)
	assert.Nil(t, r)

	f.sync()
	c, n, r = lot()
	assert.Nil(t, c, "the new state's seed begins at the next second")
	require.NotNil(t, n)
	assert.Nil(t, r)
	assert.True(t, n.Seed.IsZero())
	assert.Equal(t, clk.Now().Unix()+1, n.Start, "the rest of the hour the state started in")
	assert.Equal(t, (n.Start/3600+1)*3600, n.End)
	next := *n

	clk.Set(time.Unix(next.Start, 0))
	f.sync()
	c, n, r = lot()
	require.NotNil(t, c)
	assert.Equal(t, next, *c, "the commitment shown before the hour")
	page := f.do(http.MethodGet, "/", "").Body.String()
	assert.Contains(t, page, fmt.Sprintf("Lottery commitment in force <code>%s</code> · next from %s <code>%s</code>", next.Commitment, utc(n.Start), n.Commitment))
	assert.Contains(t, page, "function lottery(l)")
	require.NotNil(t, n)
	assert.Equal(t, next.End, n.Start)
	assert.Nil(t, r)

	clk.Set(time.Unix(next.End, 0))
	f.sync()
	_, _, r = lot()
	assert.Nil(t, r, "secret while draws made in the hour still hold")

	clk.Add(10 * time.Minute)
	f.sync()
	_, _, r = lot()
	require.NotNil(t, r)
	assert.Equal(t, next.Period, r.Period)
	assert.Equal(t, next.Commitment, r.Commitment)
	_, err := lottery.Verify(r, 1, lottery.Claim{})
	assert.NoError(t, err, "the seed revealed matches the commitment")
	page = f.do(http.MethodGet, "/", "").Body.String()
	assert.Contains(t, page, fmt.Sprintf(" · seed revealed for %s–%s <code>%s</code>", utc(r.Start), utc(r.End), r.Seed))
}

// Once the state has forgotten a period, its record comes back whole from
// the kept history: the commitment shown before it, every interval's
// odds as the state fixed them, and the seed revealed after it; visitors
// fetch it from Records without credentials.
func TestLotteryFromHistory(t *testing.T) {
	clk := newAdminClock()
	st := memstore.New()
	f := newAdminFixture(t, clk, st, func(c *waitingroom.Config) {
		c.Settings.QueueingMethod = waitingroom.Random
	})
	pub := httptest.NewServer(admin.Records(f.room))
	t.Cleanup(pub.Close)
	fetch := func(query string) (int, http.Header, []byte) {
		res, err := http.Get(pub.URL + query)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, res.Header, b
	}
	status := func() (current, revealed *lottery.Record) {
		b, err := json.Marshal(f.getJSON("/status")["lottery"])
		require.NoError(t, err)
		var l struct{ Current, Revealed *lottery.Record }
		require.NoError(t, json.Unmarshal(b, &l))
		return l.Current, l.Revealed
	}

	f.sync()
	hour := (clk.Now().Unix()/3600 + 1) * 3600 // the next whole hour: a period of its own
	var live *lottery.Record                   // the hour's record as the status revealed it
	for clk.Now().Unix() < hour+3*3600 {
		clk.Add(20 * time.Second)
		f.sync()
		if _, r := status(); r != nil && r.Start == hour && live == nil {
			live = r
		}
	}
	require.NotNil(t, live, "the status revealed the hour")
	require.Len(t, live.Odds, 180, "one odds record per 20-second interval")
	_, r := status()
	require.NotEqual(t, hour, r.Start, "the state has forgotten the hour")

	got, err := admin.Lottery(context.Background(), f.room, time.Unix(hour+1800, 0))
	require.NoError(t, err)
	assert.Equal(t, live, got, "the record put together from the history")
	_, err = lottery.Verify(got, 7, lottery.Claim{Waited: []int64{live.Odds[0].Interval, live.Odds[179].Interval}, Shown: live.Odds[:3]})
	assert.NoError(t, err)

	// Without credentials, from the public handler.
	code, h, b := fetch(fmt.Sprintf("?at=%d", hour+1800))
	require.Equal(t, http.StatusOK, code, string(b))
	assert.Equal(t, "public, max-age=3600", h.Get("Cache-Control"), "a revealed record never changes")
	var pubRec lottery.Record
	require.NoError(t, json.Unmarshal(b, &pubRec))
	assert.Equal(t, *live, pubRec)
	code, _, b = fetch("?at=" + time.Unix(hour, 0).UTC().Format(time.RFC3339))
	require.Equal(t, http.StatusOK, code)
	require.NoError(t, json.Unmarshal(b, &pubRec))
	assert.Equal(t, *live, pubRec, "RFC 3339 as well")
	code, h, b = fetch("")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "public, max-age=1", h.Get("Cache-Control"))
	assert.Contains(t, string(b), `"current":{`)
	cur, _ := status()
	code, _, b = fetch(fmt.Sprintf("?at=%d", clk.Now().Unix()))
	require.Equal(t, http.StatusOK, code)
	var curRec lottery.Record
	require.NoError(t, json.Unmarshal(b, &curRec))
	assert.Equal(t, *cur, curRec, "the current period's, from the latest sync")
	assert.True(t, curRec.Seed.IsZero(), "never a seed before its time")
	require.NotEmpty(t, cur.Odds)
	page := f.do(http.MethodGet, "/", "").Body.String()
	assert.Contains(t, page, fmt.Sprintf("</code> · odds %v · next from", cur.Odds[len(cur.Odds)-1].Odds), "the status page shows the latest odds")
	assert.Contains(t, page, "function draws(r)")

	for _, tc := range []struct {
		query string
		code  int
	}{
		{"?at=yesterday", http.StatusBadRequest},
		{fmt.Sprintf("?at=%d", hour+10*3600), http.StatusNotFound},  // after the next period
		{fmt.Sprintf("?at=%d", hour-40*86400), http.StatusNotFound}, // before the history
		{fmt.Sprintf("?at=%d", hour-3600), http.StatusNotFound},     // before the room's first period
	} {
		code, _, b := fetch(tc.query)
		assert.Equal(t, tc.code, code, "%s: %s", tc.query, b)
		assert.Contains(t, string(b), `"error"`)
	}
	res, err := http.Post(pub.URL, "text/plain", nil)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)

	// Behind the admin API too, with its credentials and no-store.
	rec := f.do(http.MethodGet, fmt.Sprintf("/lottery?at=%d", hour+1800), "")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
	var adminRec lottery.Record
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &adminRec))
	assert.Equal(t, *live, adminRec)
}

// A store without history still serves the periods of the latest sync.
func TestLotteryWithoutHistory(t *testing.T) {
	clk := newAdminClock()
	f := newAdminFixture(t, clk, plainStore{memstore.New()}, nil)
	f.sync()
	_, err := admin.Lottery(context.Background(), f.room, clk.Now().Add(time.Hour))
	assert.NoError(t, err, "the next period's commitment")
	_, err = admin.Lottery(context.Background(), f.room, clk.Now().Add(-time.Hour))
	assert.ErrorIs(t, err, admin.ErrNoHistory)
}

// The record of an event's period longer than an hour (its pre-queue
// opens two hours before it ends) comes back whole from the kept history
// when asked about its last minutes, its first odds included.
func TestLotteryOfALongPeriod(t *testing.T) {
	clk := newAdminClock()
	opens := (clk.Now().Unix()/3600 + 1) * 3600
	ends := opens + 3*3600
	f := newAdminFixture(t, clk, memstore.New(), func(c *waitingroom.Config) {
		c.Settings.QueueingMethod = waitingroom.Random
		c.Settings.Events = []waitingroom.Event{{
			Name: "drop", PrequeueStart: time.Unix(opens, 0), Start: time.Unix(opens+3600, 0),
			End: time.Unix(ends, 0), ShuffleAtStart: true,
		}}
	})
	var live *lottery.Record // the event's record as the status revealed it
	for clk.Now().Unix() < ends+4*3600 {
		clk.Add(20 * time.Second)
		f.sync()
		b, err := json.Marshal(f.getJSON("/status")["lottery"])
		require.NoError(t, err)
		var l struct{ Revealed *lottery.Record }
		require.NoError(t, json.Unmarshal(b, &l))
		if r := l.Revealed; r != nil && r.Start == opens && live == nil {
			live = r
		}
	}
	require.NotNil(t, live, "the status revealed the event's period")
	require.Equal(t, ends, live.End)
	require.Len(t, live.Odds, 360, "the odds of the event's two hours, one a 20-second interval")
	for _, at := range []int64{opens + 60, opens + 5400, ends - 60} {
		got, err := admin.Lottery(context.Background(), f.room, time.Unix(at, 0))
		require.NoError(t, err)
		assert.Empty(t, got.Places, "nobody in the pre-queue")
		got.Places = nil // the status's record has no list
		if assert.Len(t, got.Odds, len(live.Odds), "asked about %d s into the period", at-opens) {
			assert.Equal(t, live, got, "asked about %d s into the period", at-opens)
		}
	}
}

// A state lost in the middle of an hour takes its seed with it: the new
// state draws, from the next second, under a period of its own for the
// rest of the hour, and commits again to the hour after. The kept
// history returns the record of the period that drew at each second: the
// lost one's before the loss (never revealed), the new one's after it,
// revealed; and Records reads the lost one's from the store once a
// minute at most, however often it is asked for.
func TestLotteryAfterAStateLoss(t *testing.T) {
	clk := newAdminClock()
	st := &countingStore{Store: memstore.New()}
	f := newAdminFixture(t, clk, st, func(c *waitingroom.Config) {
		c.Settings.QueueingMethod = waitingroom.Random
	})
	pub := httptest.NewServer(admin.Records(f.room))
	t.Cleanup(pub.Close)
	ctx := context.Background()
	revealed := map[int64]*lottery.Record{} // as the status revealed them, by start
	f.sync()
	hour := (clk.Now().Unix()/3600 + 1) * 3600
	lost := false
	for clk.Now().Unix() < hour+4*3600 {
		clk.Add(20 * time.Second)
		if !lost && clk.Now().Unix() >= hour+1200 {
			require.NoError(t, st.Update(ctx, "launch", func(s *store.State) error { *s = store.State{}; return nil }))
			lost = true
		}
		f.sync()
		b, err := json.Marshal(f.getJSON("/status")["lottery"])
		require.NoError(t, err)
		var l struct{ Revealed *lottery.Record }
		require.NoError(t, json.Unmarshal(b, &l))
		if l.Revealed != nil {
			revealed[l.Revealed.Start] = l.Revealed
		}
	}
	var replaced *lottery.Record // the new state's rest of the hour
	for start, r := range revealed {
		if start > hour && start < hour+3600 {
			replaced = r
		}
	}
	require.NotNil(t, replaced, "the new state revealed the rest of the hour: %v", revealed)
	assert.Equal(t, hour+3600, replaced.End)
	require.Contains(t, revealed, hour+3600, "the hour after, committed again by the new state")

	for _, tc := range []struct {
		name string
		at   int64
		want *lottery.Record
	}{
		{"the rest of the hour, from its first second", replaced.Start, replaced},
		{"the rest of the hour", hour + 3000, replaced},
		{"the hour after", hour + 3600 + 1800, revealed[hour+3600]},
	} {
		got, err := admin.Lottery(ctx, f.room, time.Unix(tc.at, 0))
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
		code, b := fetchRecord(t, pub.URL, tc.at)
		require.Equal(t, http.StatusOK, code, tc.name)
		var pubRec lottery.Record
		require.NoError(t, json.Unmarshal(b, &pubRec))
		assert.Equal(t, *tc.want, pubRec, tc.name)
	}
	got, err := admin.Lottery(ctx, f.room, time.Unix(hour+600, 0))
	require.NoError(t, err)
	assert.Equal(t, lottery.Period{Start: hour, End: hour + 3600}, got.Period, "before the loss, the lost period drew")
	assert.True(t, got.Seed.IsZero(), "its seed was lost with the state")

	reads := st.reads.Load()
	for range 20 {
		code, _ := fetchRecord(t, pub.URL, hour+600)
		require.Equal(t, http.StatusOK, code)
	}
	assert.Equal(t, reads+1, st.reads.Load(), "the lost period's record, read once")
	clk.Add(time.Minute)
	code, _ := fetchRecord(t, pub.URL, hour+600)
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, reads+2, st.reads.Load(), "and again a minute later")
}

// fetchRecord gets the record of second at from the Records handler at url.
func fetchRecord(t *testing.T, url string, at int64) (int, []byte) {
	t.Helper()
	res, err := http.Get(fmt.Sprintf("%s?at=%d", url, at))
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, b
}

// countingStore counts the reads of its history.
type countingStore struct {
	*memstore.Store
	reads atomic.Int64
}

func (s *countingStore) ReadHistory(ctx context.Context, room string, from, to int64) ([]store.Record, error) {
	s.reads.Add(1)
	return s.Store.ReadHistory(ctx, room, from, to)
}

// The kept history holds every odds record and seed the status showed,
// however the syncs fall: the odds of an interval that began in a minute
// written by the very sync that fixed them (no sync from its start to
// past the minute's end), and the seed of a period revealed a minute or
// less before the next one's (an event that leaves a period of one
// minute before the hour).
func TestLotteryKeptWhateverTheSyncs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refresh time.Duration
		event   func(hour int64) []waitingroom.Event
		// skip reports whether no instance syncs at the second s of a
		// minute.
		skip func(s int64) bool
	}{
		{
			name:    "intervals that begin late in a minute, no sync until the next",
			refresh: 45 * time.Second,
			skip:    func(s int64) bool { return s >= 45 || s < 8 },
		}, {
			name:    "an event's reveal a minute before the next period's",
			refresh: 50 * time.Second,
			event: func(hour int64) []waitingroom.Event {
				return []waitingroom.Event{{
					Name: "drop", PrequeueStart: time.Unix(hour+600, 0), Start: time.Unix(hour+1200, 0),
					End: time.Unix(hour+3540, 0), ShuffleAtStart: true,
				}}
			},
			skip: func(int64) bool { return false },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newAdminClock()
			hour := (clk.Now().Unix()/3600 + 1) * 3600
			f := newAdminFixture(t, clk, memstore.New(), func(c *waitingroom.Config) {
				c.Settings.QueueingMethod = waitingroom.Random
				c.RefreshInterval = tc.refresh
				if tc.event != nil {
					c.Settings.Events = tc.event(hour)
				}
			})
			live := map[int64]*lottery.Record{} // each period's record as the status revealed it
			for clk.Now().Unix() < hour+4*3600 {
				clk.Add(5 * time.Second)
				if tc.skip(clk.Now().Unix() % 60) {
					continue
				}
				f.sync()
				b, err := json.Marshal(f.getJSON("/status")["lottery"])
				require.NoError(t, err)
				var l struct{ Revealed *lottery.Record }
				require.NoError(t, json.Unmarshal(b, &l))
				if r := l.Revealed; r != nil && r.Start >= hour && r.End <= hour+2*3600 && live[r.Start] == nil {
					live[r.Start] = r
				}
			}
			require.NotEmpty(t, live)
			for start, want := range live {
				require.NotEmpty(t, want.Odds, "period from %d s", start-hour)
				got, err := admin.Lottery(context.Background(), f.room, time.Unix(start, 0))
				require.NoError(t, err, "period from %d s", start-hour)
				got.Places = nil // the status's record has no list
				assert.Equal(t, want, got, "the period from %d s, from the kept history", start-hour)
			}
		})
	}
}

// utc is Unix seconds as the status page writes them.
func utc(s int64) string { return time.Unix(s, 0).UTC().Format(time.RFC3339) }
