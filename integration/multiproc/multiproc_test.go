package multiproc

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
	"github.com/go-waitingroom/waitingroom/store/sqlstore"
)

// The multi-process runs: three processes, small limits, many more clients
// than slots, for a bounded time.
const (
	mpProcs     = 3
	mpTotal     = 20
	mpPerMinute = 20
	mpSession   = time.Minute
	mpClients   = 120
	mpArrival   = 2 * time.Second  // clients arrive spread over this
	mpRun       = 25 * time.Second // from the first client to the end of the load
	mpSample    = 500 * time.Millisecond
	// mpLag is how long a slot may take to be used: a sync (200 ms) and a
	// waiting client's refresh (1 to 2 s, as the Refresh header rounds up).
	mpLag = 2500 * time.Millisecond
)

// redisURL is the Redis the multi-process test shares.
func redisURL() string {
	return servicetest.Redis.URL()
}

// postgresURL is the PostgreSQL database the multi-process test shares.
func postgresURL() string {
	return servicetest.PostgreSQL.URL()
}

// TestRedis runs three proxy processes on one Redis.
func TestRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: runs three processes for about 30 s")
	}
	t.Parallel()
	opts, err := redis.ParseURL(redisURL())
	require.NoError(t, err)
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		servicetest.Unavailable(t, servicetest.Redis, err)
	}
	prefix := randomName("wrmulti:") + ":"
	t.Cleanup(func() {
		keys, err := c.Keys(context.Background(), prefix+"*").Result()
		assert.NoError(t, err)
		if len(keys) > 0 {
			assert.NoError(t, c.Del(context.Background(), keys...).Err())
		}
	})
	runShared(t, "-store", redisURL(), "-store-prefix", prefix)
}

// TestPostgres runs three proxy processes on one PostgreSQL table, created
// here (the processes run with the default -create-schema=false).
func TestPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short mode: runs three processes for about 30 s")
	}
	t.Parallel()
	db, err := sql.Open("pgx", postgresURL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		servicetest.Unavailable(t, servicetest.PostgreSQL, err)
	}
	table := randomName("wrmulti_")
	s, err := sqlstore.New(db, sqlstore.Postgres, sqlstore.Options{Table: table})
	require.NoError(t, err)
	require.NoError(t, s.CreateSchema(ctx))
	t.Cleanup(func() {
		_, err := db.Exec(`DROP TABLE IF EXISTS "` + table + `"`)
		assert.NoError(t, err)
	})
	runShared(t, "-store", postgresURL(), "-store-table", table)
}

// sample is one moment of a run, as the demo applications saw it.
type sample struct {
	at       time.Time
	distinct int // active sessions, each counted once
	sum      int // the sum of the processes' own counts
}

// runShared starts the processes on the store given by storeArgs, drives
// the load and checks the limits from the demo applications' counts.
func runShared(t *testing.T, storeArgs ...string) {
	args := append([]string{"-demo", "-key", hexKey, "-name", randomName("multi-"),
		"-total-active-users", strconv.Itoa(mpTotal), "-new-users-per-minute", strconv.Itoa(mpPerMinute),
		"-session-duration", mpSession.String(), "-refresh-interval", "1s", "-sync-interval", "200ms"}, storeArgs...)
	procs := make([]*proc, mpProcs)
	bases := make([]string, mpProcs)
	for i := range procs {
		procs[i] = startProc(t, fmt.Sprintf("process %d", i+1), args...)
		bases[i] = procs[i].base
	}

	ctx, cancel := context.WithTimeout(context.Background(), mpRun)
	defer cancel()
	start := time.Now()
	var stats loadStats
	done := make(chan struct{})
	go func() {
		defer close(done)
		drive(ctx, bases, mpClients, mpArrival, &stats)
	}()

	hc := &http.Client{Timeout: 5 * time.Second}
	var samples []sample
	tick := time.NewTicker(mpSample)
	defer tick.Stop()
loop:
	for {
		select {
		case <-done:
			break loop
		case <-tick.C:
		}
		m, err := fetchReports(context.Background(), hc, procs)
		require.NoError(t, err)
		samples = append(samples, sample{at: m.at, distinct: m.active(mpSession), sum: m.sum})
	}
	end := time.Now()
	final, err := fetchReports(context.Background(), hc, procs)
	require.NoError(t, err)

	// Report what was seen.
	peak, peakSum := 0, 0
	for _, s := range samples {
		peak, peakSum = max(peak, s.distinct), max(peakSum, s.sum)
	}
	perMinute := final.perMinute()
	minutes := make([]time.Time, 0, len(perMinute))
	for m := range perMinute {
		minutes = append(minutes, m)
	}
	slices.SortFunc(minutes, time.Time.Compare)
	var byMinute string
	for _, m := range minutes {
		byMinute += fmt.Sprintf(" %s=%d", m.Format("15:04"), perMinute[m])
	}
	t.Logf("%d processes, %d clients, %v (from %s): %d samples, peak active %d (sum of per-process counts %d), admissions per minute:%s",
		mpProcs, mpClients, end.Sub(start).Round(time.Millisecond), start.Format("15:04:05"), len(samples), peak, peakSum, byMinute)
	t.Logf("clients: %s", &stats)

	// Nothing failed on the way.
	assert.Zero(t, stats.serverErrors.Load(), "5xx responses: %s", &stats)
	assert.Zero(t, stats.otherErrors.Load(), "errors: %s", &stats)
	assert.Zero(t, stats.lostSession.Load(), "admitted clients must keep passing: %s", &stats)
	require.GreaterOrEqual(t, len(samples), int(mpRun/mpSample)/2, "too few samples")

	// The limits held at every sample and in every minute, as the demo
	// applications counted.
	for _, s := range samples {
		assert.LessOrEqual(t, s.distinct, mpTotal, "active sessions at %s", s.at.Format("15:04:05.000"))
	}
	for _, m := range minutes {
		assert.LessOrEqual(t, perMinute[m], mpPerMinute, "admissions in the minute %s", m.Format("15:04"))
	}
	// The demo applications saw every client that got in, once.
	assert.Equal(t, int(stats.clientsIn.Load()), len(final.admitted), "sessions the demos saw vs clients that got in")

	// Admissions reached the limits as far as the room releases them:
	// with a queue, New Users Per Minute is released over the minute, so
	// by the end of the run (less the time a slot takes to be used) at
	// least that share of the minute the run ends in was due. A run that
	// began in the minute before counts that minute for nothing: begun at
	// its 58th second, its slots, all released by then, could not all be
	// used in the 2 s left while the processes started (6 of 20 were).
	due := end.Add(-mpLag).Sub(end.Add(-mpLag).Truncate(time.Minute)).Minutes()
	want := min(mpTotal, int(math.Floor(mpPerMinute*min(due, 1))))
	assert.GreaterOrEqual(t, len(final.admitted), want, "admissions: %d were due by the end of the run", want)
}
