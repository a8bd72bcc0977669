package main

import (
	"bytes"
	"cmp"
	"context"
	"github.com/go-waitingroom/waitingroom/template"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/internal/demo"
	"github.com/go-waitingroom/waitingroom/internal/spectest"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

var testKey = []byte("jsonclient test key, 32 bytes or more, tests only")

// fixture is a room served by an httptest server, with a clock that moves
// only when the client sleeps.
type fixture struct {
	room  *waitingroom.Room
	clock *spectest.Clock
	srv   *httptest.Server

	mu         sync.Mutex
	requests   int
	withCookie int // requests that carried the room's cookie
}

func newFixture(t *testing.T, cfg waitingroom.Config) *fixture {
	t.Helper()
	f := &fixture{clock: spectest.NewClock(spectest.Start)}
	cfg.Name = "api"
	cfg.Keys = [][]byte{testKey}
	cfg.RefreshInterval = time.Second // the floor: the test never sleeps for real anyway
	cfg.RefreshJitter = -1
	cfg.SyncInterval = -1
	cfg.Now = f.clock.Now
	cfg.Logger = slog.New(slog.DiscardHandler)
	if cfg.TotalActiveUsers == 0 {
		cfg.TotalActiveUsers, cfg.NewUsersPerMinute = 1, 1
	}
	room, err := waitingroom.New(cfg, memstore.New())
	require.NoError(t, err)
	t.Cleanup(func() { _ = room.Close() })
	f.room = room
	f.sync(t)
	app := room.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t, ok := waitingroom.TicketFrom(w)
		_, _ = w.Write([]byte(demo.Greeting(t, ok)))
	}))
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests++
		if _, err := r.Cookie("__waitingroom_api"); err == nil {
			f.withCookie++
		}
		f.mu.Unlock()
		app.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) sync(t *testing.T) {
	t.Helper()
	require.NoError(t, f.room.Sync(context.Background()))
}

// fill lets a first visitor in, so that the room (one slot) is full and
// has an admission rate to estimate from.
func (f *fixture) fill(t *testing.T) {
	t.Helper()
	resp, err := http.Get(f.srv.URL)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Empty(t, resp.Header.Get("Refresh"), "the first visitor is let in")
	f.sync(t)
	f.mu.Lock()
	f.requests, f.withCookie = 0, 0
	f.mu.Unlock()
}

func update(t *testing.T, f *fixture, fn func(*waitingroom.Settings)) {
	t.Helper()
	require.NoError(t, f.room.Update(context.Background(), fn))
	f.sync(t)
}

func TestWait(t *testing.T) {
	tests := []struct {
		name    string
		cfg     waitingroom.Config
		full    bool   // a first visitor fills the room
		jsonKey string // the client's; default waitingRoom
		// onSleep runs after the client's nth sleep (from 1), once the
		// clock has moved.
		onSleep   func(t *testing.T, f *fixture, n int)
		wantLines []string // progress lines, in order
		wantBody  string
		wantErr   error
	}{
		{
			name: "let in at once",
			wantLines: []string{
				"let in: 200 OK",
			},
			wantBody: "Welcome! You were let in at 2026-03-14T12:00:30Z.\n",
		},
		{
			name: "waits while everyone is queued, then is let in",
			cfg:  waitingroom.Config{Settings: waitingroom.Settings{QueueAll: true}},
			onSleep: func(t *testing.T, f *fixture, n int) {
				if n == 3 {
					update(t, f, func(s *waitingroom.Settings) { s.QueueAll = false })
				}
			},
			wantLines: []string{
				"waiting: the site lets no one in at the moment; next try in 1s",
				"waiting: the site lets no one in at the moment; next try in 1s",
				"waiting: the site lets no one in at the moment; next try in 1s",
				"let in: 200 OK",
			},
			wantBody: "Welcome! You were let in at 2026-03-14T12:00:33Z.\n",
		},
		{
			name: "prints the FIFO estimate until a slot frees",
			full: true,
			onSleep: func(t *testing.T, f *fixture, n int) {
				if n == 2 {
					update(t, f, func(s *waitingroom.Settings) { s.TotalActiveUsers, s.NewUsersPerMinute = 2, 2 })
				}
			},
			// The slot is held by a session that ends in 5 minutes (and
			// a second): the estimate says so, and cannot know that the
			// limit is about to be raised.
			wantLines: []string{
				"waiting: estimated wait 6 minutes, number 1 in line; next try in 1s",
				"waiting: estimated wait 6 minutes, number 1 in line; next try in 1s",
				"let in: 200 OK",
			},
			wantBody: "Welcome! You were let in at 2026-03-14T12:00:32Z.\n",
		},
		{
			name: "solves the room's puzzle and sends the answer",
			cfg: waitingroom.Config{Settings: waitingroom.Settings{
				Challenge: &challenge.Policy{
					Kind: challenge.PoW, OnFail: challenge.Infinite, Difficulty: 8,
				},
			}},
			full: true,
			onSleep: func(t *testing.T, f *fixture, n int) {
				if n == 1 {
					update(t, f, func(s *waitingroom.Settings) { s.TotalActiveUsers, s.NewUsersPerMinute = 2, 2 })
				}
			},
			// Parked without the answer: let in only with it.
			wantLines: []string{
				"solved the room's puzzle",
				"waiting: estimated wait 6 minutes, number 1 in line; next try in 1s",
				"let in: 200 OK",
			},
			wantBody: "Welcome! You were let in at 2026-03-14T12:00:31Z.\n",
		},
		{
			name:    "reads the JSON key the room is configured with",
			cfg:     waitingroom.Config{Settings: waitingroom.Settings{QueueAll: true}, Page: template.Options{JSONKey: "cfWaitingRoom"}},
			jsonKey: "cfWaitingRoom",
			onSleep: func(t *testing.T, f *fixture, n int) {
				update(t, f, func(s *waitingroom.Settings) { s.QueueAll = false })
			},
			wantLines: []string{
				"waiting: the site lets no one in at the moment; next try in 1s",
				"let in: 200 OK",
			},
			wantBody: "Welcome! You were let in at 2026-03-14T12:00:31Z.\n",
		},
		{
			name:    "gives up when its time is over",
			cfg:     waitingroom.Config{Settings: waitingroom.Settings{QueueAll: true}},
			onSleep: func(*testing.T, *fixture, int) {},
			wantLines: []string{
				"waiting: the site lets no one in at the moment; next try in 1s",
				"waiting: the site lets no one in at the moment; next try in 1s",
				"waiting: the site lets no one in at the moment; next try in 1s",
			},
			wantErr: context.DeadlineExceeded,
		},
		{
			name:    "stops at a closed site",
			cfg:     waitingroom.Config{Settings: waitingroom.Settings{QueueingMethod: waitingroom.Reject}},
			wantErr: errClosed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.cfg)
			if tt.full {
				f.fill(t)
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			var (
				log    bytes.Buffer
				sleeps []time.Duration
			)
			jar, err := cookiejar.New(nil)
			require.NoError(t, err)
			w := &waiter{
				client:  &http.Client{Jar: jar},
				jsonKey: cmp.Or(tt.jsonKey, "waitingRoom"),
				log:     &log,
				sleep: func(ctx context.Context, d time.Duration) error {
					sleeps = append(sleeps, d)
					f.clock.Advance(d)
					if tt.wantErr == context.DeadlineExceeded && len(sleeps) == 3 {
						cancel(context.DeadlineExceeded) // as -max-wait would
					}
					if err := context.Cause(ctx); err != nil {
						return err
					}
					if tt.onSleep != nil {
						tt.onSleep(t, f, len(sleeps))
					}
					return nil
				},
			}

			body, err := w.wait(ctx, f.srv.URL+"/")

			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tt.wantBody, string(body))
			}
			assert.Equal(t, tt.wantLines, lines(log.String()))
			for i, d := range sleeps {
				assert.Equal(t, time.Second, d, "sleep %d honours refreshIntervalSeconds", i+1)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			assert.Equal(t, f.requests-1, f.withCookie, "every request after the first carries the room's cookie")
		})
	}
}

func lines(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestWaitStopsAtAnHTTPError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	w := &waiter{client: srv.Client(), jsonKey: "waitingRoom", log: &bytes.Buffer{},
		sleep: func(context.Context, time.Duration) error { t.Fatal("no sleep after an error"); return nil }}
	_, err := w.wait(context.Background(), srv.URL)
	assert.ErrorContains(t, err, "503 Service Unavailable")
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		st   status
		want string
	}{
		{status{InWaitingRoom: true, QueueAll: true}, "the site lets no one in at the moment"},
		{status{InWaitingRoom: true, QueueIsFull: true}, "the queue is full: no one new can join"},
		{status{InWaitingRoom: true}, "no estimate yet"},
		{status{InWaitingRoom: true, WaitTimeFormatted: "unavailable", PositionInLine: 31}, "no estimate yet, number 31 in line"},
		{status{InWaitingRoom: true, WaitTimeKnown: true, WaitTimeFormatted: "20 minutes", PositionInLine: 31}, "estimated wait 20 minutes, number 31 in line"},
		{status{InWaitingRoom: true, WaitTimeKnown: true, WaitTimeFormatted: "3 minutes to 14 minutes", IsRandomQueue: true, ChancePerRefreshOneIn: 29}, "estimated wait 3 minutes to 14 minutes (random draw, 1 in 29 at each try)"},
		{status{InWaitingRoom: true, WaitTimeKnown: true, WaitTimeFormatted: "10 minutes"}, "estimated wait 10 minutes"},
		{status{InWaitingRoom: true, WaitTimeKnown: true, WaitTimeFormatted: "5 minutes to 15 minutes", IsRandomQueue: true}, "estimated wait 5 minutes to 15 minutes (random draw)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, describe(tt.st))
		})
	}
}

func TestSleepHonoursTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, sleep(ctx, time.Hour), context.Canceled)
	assert.NoError(t, sleep(context.Background(), 0))
}
