package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
)

// requireEnv turns a missing Redis into a failure (CI sets it).
const requireEnv = "WAITINGROOM_REQUIRE_SERVICES"

// redisOptions returns the options of the test Redis server, or skips the
// test (fails it when requireEnv is 1) when the server cannot be reached.
func redisOptions(t *testing.T) *redis.Options {
	t.Helper()
	url := os.Getenv("WAITINGROOM_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	c := redis.NewClient(opts)
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("Redis is required (%s=1) but not reachable at %s: %v", requireEnv, url, err)
		}
		t.Skipf("skipping: Redis not reachable at %s (%v); start it or set WAITINGROOM_REDIS_URL, and set %s=1 to make this a failure", url, err, requireEnv)
	}
	return opts
}

// randomHex returns 16 random hex digits, to name what one run creates.
func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// instance is one in-process instance of the program.
type instance struct {
	room *waitingroom.Room
	srv  *httptest.Server
}

// start starts an instance with its own Redis client, syncing only when
// the test says so.
func start(t *testing.T, o options, key []byte, ropts *redis.Options) *instance {
	t.Helper()
	client := redis.NewClient(ropts)
	t.Cleanup(func() { _ = client.Close() })
	o.syncInterval = -1
	room, st, err := newRoom(o, key, client, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { _ = room.Close(); _ = st.Close() })
	srv := httptest.NewServer(newServer(room, o.id))
	t.Cleanup(srv.Close)
	return &instance{room: room, srv: srv}
}

func (in *instance) sync(t *testing.T) {
	t.Helper()
	require.NoError(t, in.room.Sync(context.Background()))
}

// visit requests / as a client that asks for JSON and carries cookies; it
// returns the response, its body and the cookies the visitor holds after it.
func (in *instance) visit(t *testing.T, cookies []*http.Cookie) (*http.Response, string, []*http.Cookie) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, in.srv.URL+"/", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json")
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if set := resp.Cookies(); len(set) > 0 {
		cookies = set
	}
	return resp, string(body), cookies
}

func (in *instance) stats(t *testing.T) stats {
	t.Helper()
	resp, err := http.Get(in.srv.URL + "/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	var s stats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&s))
	return s
}

func TestTwoInstancesShareOneQueue(t *testing.T) {
	ropts := redisOptions(t)
	o := options{name: "multi-" + randomHex(), keyPrefix: "wrexample:" + randomHex() + ":", total: 1, perMinute: 1}
	t.Cleanup(func() {
		c := redis.NewClient(ropts)
		defer c.Close()
		assert.NoError(t, c.Del(context.Background(), o.keyPrefix+o.name).Err())
	})
	key := []byte(strings.Repeat("k", 32))

	oa, ob := o, o
	oa.id, ob.id = "A", "B"
	a, b := start(t, oa, key, ropts), start(t, ob, key, ropts)
	a.sync(t) // A syncs first and holds the one free slot
	b.sync(t)

	resp, body, first := a.visit(t, nil)
	assert.Equal(t, "A", resp.Header.Get("X-Instance"))
	assert.Contains(t, body, "Welcome! You were let in at", "A lets the first visitor in")
	require.NotEmpty(t, first)

	resp, body, _ = b.visit(t, nil)
	assert.Equal(t, "B", resp.Header.Get("X-Instance"))
	assert.NotEmpty(t, resp.Header.Get("Refresh"))
	assert.Contains(t, body, `"inWaitingRoom":true`, "B queues the second visitor: the room A filled is full")

	a.sync(t)
	b.sync(t)
	a.sync(t)
	for _, in := range []*instance{a, b} {
		s := in.stats(t)
		assert.Equal(t, stats{Instance: s.Instance, Instances: 2, Active: 1, Waiting: 1}, s, "both instances see the shared counts")
	}

	resp, body, _ = b.visit(t, first)
	assert.Equal(t, "B", resp.Header.Get("X-Instance"))
	assert.Contains(t, body, "Welcome! You were let in at", "B knows the visitor A let in: one key, one room")

	_, body, _ = a.visit(t, nil)
	assert.Contains(t, body, `"inWaitingRoom":true`, "A queues a third visitor too")
}

func TestHealthzWaitsForTheFirstSync(t *testing.T) {
	ropts := redisOptions(t)
	o := options{id: "A", name: "health-" + randomHex(), keyPrefix: "wrexample:", total: 1, perMinute: 1}
	t.Cleanup(func() {
		c := redis.NewClient(ropts)
		defer c.Close()
		assert.NoError(t, c.Del(context.Background(), o.keyPrefix+o.name).Err())
	})
	in := start(t, o, []byte(strings.Repeat("k", 32)), ropts)

	resp, err := http.Get(in.srv.URL + "/healthz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "not synced yet")

	in.sync(t)
	resp, err = http.Get(in.srv.URL + "/healthz")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestRunRefuses(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		args    []string
		wantErr string
	}{
		{name: "no key", key: "", args: nil, wantErr: "every instance needs the same cookie key: WAITINGROOM_KEY is not set"},
		{name: "bad Redis URL", key: strings.Repeat("ab", 32), args: []string{"-redis", "http://nowhere"}, wantErr: "-redis:"},
		{name: "stray argument", key: strings.Repeat("ab", 32), args: []string{"extra"}, wantErr: `unexpected arguments ["extra"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("WAITINGROOM_KEY", tt.key)
			err := run(context.Background(), tt.args, slog.New(slog.DiscardHandler))
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}
