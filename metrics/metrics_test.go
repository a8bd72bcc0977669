package metrics_test

import (
	"context"
	"errors"
	"github.com/go-waitingroom/waitingroom/internal/testclock"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/metrics"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// clock is a virtual clock: tests move it, nothing sleeps.
type clock = testclock.Clock

// flakyStore is a store that fails while down is set.
type flakyStore struct {
	store.Store
	down atomic.Bool
}

func (s *flakyStore) Update(ctx context.Context, room string, fn func(*store.State) error) error {
	if s.down.Load() {
		return errors.New("store unreachable")
	}
	return s.Store.Update(ctx, room, fn)
}

func newRoom(t *testing.T, clk *clock, st store.Store, name string, total, perMinute int) (*waitingroom.Room, http.Handler) {
	t.Helper()
	rm, err := waitingroom.New(waitingroom.Config{
		Name: name,
		Settings: waitingroom.Settings{
			TotalActiveUsers:  total,
			NewUsersPerMinute: perMinute,
		},
		Keys:         [][]byte{[]byte("0123456789abcdef0123456789abcdef")},
		SyncInterval: -1,
		Now:          clk.Now,
		Logger:       slog.New(slog.DiscardHandler),
	}, st)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rm.Close() })
	app := rm.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "app")
	}))
	return rm, app
}

// visitors sends n new visitors through app and returns how many got in.
func visitors(app http.Handler, n int) int {
	in := 0
	for range n {
		w := httptest.NewRecorder()
		app.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://example.com/", nil))
		if w.Body.String() == "app" {
			in++
		}
	}
	return in
}

// scrape serves reg with promhttp, fetches it as an HTTP client would and
// parses the text exposition.
func scrape(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return mfs
}

// value returns the value of the series of family name whose labels are
// exactly labels (name, value pairs), and whether it exists.
func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	t.Helper()
	mf, ok := mfs[name]
	if !ok {
		return 0, false
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) != len(want) {
			continue
		}
		match := true
		for k, v := range want {
			if got[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), true
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue(), true
		}
		t.Fatalf("%s: unexpected type %v", name, mf.GetType())
	}
	return 0, false
}

func TestCollector(t *testing.T) {
	clk := testclock.New(testclock.Start)
	st := &flakyStore{Store: memstore.New()}
	launch, launchApp := newRoom(t, clk, st, "launch", 10, 4)
	sale, saleApp := newRoom(t, clk, memstore.New(), "sale", 50, 50)

	require.NoError(t, launch.Sync(context.Background()))
	require.NoError(t, sale.Sync(context.Background()))
	require.Equal(t, 4, visitors(launchApp, 7)) // 4 in, 3 wait
	require.Equal(t, 2, visitors(saleApp, 2))
	clk.Add(30 * time.Second)
	st.down.Store(true)
	require.Error(t, launch.Sync(context.Background()))
	st.down.Store(false)
	require.NoError(t, launch.Sync(context.Background()))
	require.NoError(t, sale.Sync(context.Background()))
	require.NoError(t, sale.Update(context.Background(), func(s *waitingroom.Settings) { s.QueueingMethod = waitingroom.Random }))

	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(metrics.NewCollector(launch, nil, sale)))
	mfs := scrape(t, reg)

	ls := launch.Stats()
	require.Equal(t, 4, ls.Active)
	require.Equal(t, 3, ls.Waiting)
	require.True(t, ls.Estimate.Known)
	ss := sale.Stats()
	require.True(t, ss.Estimate.Known)

	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"waitingroom_active_visitors", []string{"room", "launch"}, 4},
		{"waitingroom_waiting_visitors", []string{"room", "launch"}, 3},
		{"waitingroom_admitted_this_minute", []string{"room", "launch"}, 4},
		{"waitingroom_outflow_per_minute", []string{"room", "launch"}, ls.OutflowPerMinute},
		{"waitingroom_estimate_known", []string{"room", "launch"}, 1},
		{"waitingroom_estimated_wait_seconds", []string{"room", "launch"}, ls.Estimate.Wait.Seconds()},
		{"waitingroom_instances", []string{"room", "launch"}, 1},
		{"waitingroom_status", []string{"room", "launch", "status", "queueing"}, 1},
		{"waitingroom_status", []string{"room", "launch", "status", "not_queueing"}, 0},
		{"waitingroom_status", []string{"room", "launch", "status", "event_prequeueing"}, 0},
		{"waitingroom_status", []string{"room", "launch", "status", "suspended"}, 0},
		{"waitingroom_queueing_method", []string{"room", "launch", "method", "fifo"}, 1},
		{"waitingroom_queueing_method", []string{"room", "launch", "method", "random"}, 0},
		{"waitingroom_queue_all", []string{"room", "launch"}, 0},
		{"waitingroom_total_active_users_limit", []string{"room", "launch"}, 10},
		{"waitingroom_new_users_per_minute_limit", []string{"room", "launch"}, 4},
		{"waitingroom_last_sync_timestamp_seconds", []string{"room", "launch"}, float64(clk.Now().Unix())},
		{"waitingroom_admitted_total", []string{"room", "launch"}, 4},
		{"waitingroom_queued_total", []string{"room", "launch"}, 3},
		{"waitingroom_revoked_total", []string{"room", "launch"}, 0},
		{"waitingroom_bypassed_total", []string{"room", "launch"}, 0},
		{"waitingroom_challenges_total", []string{"room", "launch", "outcome", "issued"}, 0},
		{"waitingroom_challenges_total", []string{"room", "launch", "outcome", "parked"}, 0},
		{"waitingroom_syncs_total", []string{"room", "launch"}, 3},
		{"waitingroom_sync_errors_total", []string{"room", "launch"}, 1},

		{"waitingroom_active_visitors", []string{"room", "sale"}, 2},
		{"waitingroom_waiting_visitors", []string{"room", "sale"}, 0},
		{"waitingroom_status", []string{"room", "sale", "status", "not_queueing"}, 1},
		{"waitingroom_queueing_method", []string{"room", "sale", "method", "random"}, 1},
		{"waitingroom_queueing_method", []string{"room", "sale", "method", "fifo"}, 0},
		{"waitingroom_estimated_wait_seconds", []string{"room", "sale"}, ss.Estimate.Wait.Seconds()},
		{"waitingroom_estimated_wait_percentile_seconds", []string{"room", "sale", "percentile", "25"}, ss.Estimate.P25.Seconds()},
		{"waitingroom_estimated_wait_percentile_seconds", []string{"room", "sale", "percentile", "50"}, ss.Estimate.P50.Seconds()},
		{"waitingroom_estimated_wait_percentile_seconds", []string{"room", "sale", "percentile", "75"}, ss.Estimate.P75.Seconds()},
		{"waitingroom_admitted_total", []string{"room", "sale"}, 2},
		{"waitingroom_syncs_total", []string{"room", "sale"}, 2},
	} {
		got, ok := value(t, mfs, tc.name, tc.labels...)
		if assert.True(t, ok, "%s%v missing", tc.name, tc.labels) {
			assert.InDelta(t, tc.want, got, 1e-9, "%s%v", tc.name, tc.labels)
		}
	}

	_, ok := value(t, mfs, "waitingroom_estimated_wait_percentile_seconds", "room", "launch", "percentile", "50")
	assert.False(t, ok, "no percentiles for FIFO")
	d, ok := value(t, mfs, "waitingroom_last_sync_duration_seconds", "room", "launch")
	assert.True(t, ok)
	assert.GreaterOrEqual(t, d, 0.0)

	// The four let in at once waited nothing; no session ended yet.
	waits := histogramOf(t, mfs, "waitingroom_wait_seconds", "launch")
	assert.Equal(t, uint64(4), waits.GetSampleCount())
	assert.Zero(t, waits.GetSampleSum())
	for _, b := range waits.GetBucket() {
		assert.Equal(t, uint64(4), b.GetCumulativeCount(), "le %v", b.GetUpperBound())
	}
	assert.Equal(t, uint64(2), histogramOf(t, mfs, "waitingroom_wait_seconds", "sale").GetSampleCount())
	assert.Zero(t, histogramOf(t, mfs, "waitingroom_session_seconds", "launch").GetSampleCount())

	for name, typ := range map[string]dto.MetricType{
		"waitingroom_active_visitors":   dto.MetricType_GAUGE,
		"waitingroom_admitted_total":    dto.MetricType_COUNTER,
		"waitingroom_sync_errors_total": dto.MetricType_COUNTER,
		"waitingroom_wait_seconds":      dto.MetricType_HISTOGRAM,
		"waitingroom_session_seconds":   dto.MetricType_HISTOGRAM,
	} {
		assert.Equal(t, typ, mfs[name].GetType(), name)
		assert.NotEmpty(t, mfs[name].GetHelp(), name)
	}
}

func TestCollectorBeforeFirstSync(t *testing.T) {
	clk := testclock.New(testclock.Start)
	rm, _ := newRoom(t, clk, memstore.New(), "launch", 10, 10)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(metrics.NewCollector(rm)))
	mfs := scrape(t, reg)

	_, ok := value(t, mfs, "waitingroom_last_sync_timestamp_seconds", "room", "launch")
	assert.False(t, ok, "no sync yet")
	known, ok := value(t, mfs, "waitingroom_estimate_known", "room", "launch")
	assert.True(t, ok)
	assert.Zero(t, known)
	_, ok = value(t, mfs, "waitingroom_estimated_wait_seconds", "room", "launch")
	assert.False(t, ok, "no estimate when unknown")
	n, ok := value(t, mfs, "waitingroom_syncs_total", "room", "launch")
	assert.True(t, ok)
	assert.Zero(t, n)
}

func TestCollectorDescribesWhatItCollects(t *testing.T) {
	clk := testclock.New(testclock.Start)
	rm, _ := newRoom(t, clk, memstore.New(), "launch", 10, 10)
	require.NoError(t, rm.Update(context.Background(), func(s *waitingroom.Settings) { s.QueueingMethod = waitingroom.Random }))
	require.NoError(t, rm.Sync(context.Background()))
	// A pedantic registry checks every collected metric against Describe.
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(metrics.NewCollector(rm)))
	_, err := reg.Gather()
	require.NoError(t, err)
}

func TestCollectorDuplicateNames(t *testing.T) {
	clk := testclock.New(testclock.Start)
	a, _ := newRoom(t, clk, memstore.New(), "launch", 10, 10)
	b, _ := newRoom(t, clk, memstore.New(), "launch", 10, 10)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(metrics.NewCollector(a, b)))
	_, err := reg.Gather()
	assert.Error(t, err, "two rooms of one name are reported by Gather")
}

// histogramOf returns the histogram name of room in mfs.
func histogramOf(t *testing.T, mfs map[string]*dto.MetricFamily, name, room string) *dto.Histogram {
	t.Helper()
	for _, m := range mfs[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "room" && l.GetValue() == room {
				return m.GetHistogram()
			}
		}
	}
	t.Fatalf("%s{room=%q} missing", name, room)
	return nil
}

// While an event overrides them, the limits and method gauges give those
// in force, not the room's own.
func TestCollectorEventInForce(t *testing.T) {
	clk := testclock.New(testclock.Start)
	room, _ := newRoom(t, clk, memstore.New(), "drop", 15, 15)
	start := clk.Now().Truncate(time.Minute).Add(time.Minute)
	require.NoError(t, room.Update(context.Background(), func(s *waitingroom.Settings) {
		s.Events = []waitingroom.Event{{Name: "drop", Start: start, End: start.Add(time.Hour), TotalActiveUsers: 50, NewUsersPerMinute: 20, QueueingMethod: waitingroom.Random}}
	}))
	clk.Set(start.Add(time.Second))
	require.NoError(t, room.Sync(context.Background()))
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(metrics.NewCollector(room)))
	mfs := scrape(t, reg)
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"waitingroom_total_active_users_limit", []string{"room", "drop"}, 50},
		{"waitingroom_new_users_per_minute_limit", []string{"room", "drop"}, 20},
		{"waitingroom_queueing_method", []string{"room", "drop", "method", "random"}, 1},
		{"waitingroom_queueing_method", []string{"room", "drop", "method", "fifo"}, 0},
	} {
		got, ok := value(t, mfs, tc.name, tc.labels...)
		if assert.True(t, ok, "%s%v missing", tc.name, tc.labels) {
			assert.Equal(t, tc.want, got, "%s%v", tc.name, tc.labels)
		}
	}
}
