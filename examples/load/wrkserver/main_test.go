package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireEnv turns a missing Redis into a failure (CI sets it).
const requireEnv = "WAITINGROOM_REQUIRE_SERVICES"

var testKey = []byte("wrkserver test key: 32 bytes or more, tests only")

func TestParse(t *testing.T) {
	o, err := parse([]string{"-mode", "memory"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, modeMemory, o.mode)
	assert.Regexp(t, `^wrkserver-[0-9a-f]{8}$`, o.name)
	for _, args := range [][]string{
		{"-mode", "sql"},
		{"-listen", "0.0.0.0:8090"},
		{"-listen", ":8090"},
		{"-listen", "192.0.2.1:8090"},
		{"extra"},
	} {
		_, err := parse(args, io.Discard)
		assert.Error(t, err, "%q", args)
	}
}

// get requests / from srv with cookie ("" for none) and returns the
// response and its body.
func get(t *testing.T, srv *httptest.Server, cookie string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
	require.NoError(t, err)
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// serve starts the handler of o on an httptest server.
func serve(t *testing.T, o options) *httptest.Server {
	t.Helper()
	h, release, err := newHandler(context.Background(), o, testKey, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(release)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// checkAdmittedPath checks what wrk relies on: the first request gets a
// cookie and the body; the same cookie then gets the body and no new
// cookie.
func checkAdmittedPath(t *testing.T, srv *httptest.Server) {
	t.Helper()
	resp, b := get(t, srv, "")
	assert.Equal(t, string(body), b)
	cs := resp.Cookies()
	require.Len(t, cs, 1)
	for range 3 {
		resp, b = get(t, srv, cs[0].Name+"="+cs[0].Value)
		assert.Equal(t, string(body), b)
		assert.Empty(t, resp.Cookies())
	}
}

func TestBare(t *testing.T) {
	o, err := parse(nil, io.Discard)
	require.NoError(t, err)
	resp, b := get(t, serve(t, o), "")
	assert.Equal(t, string(body), b)
	assert.Empty(t, resp.Cookies())
}

func TestMemory(t *testing.T) {
	o, err := parse([]string{"-mode", "memory"}, io.Discard)
	require.NoError(t, err)
	checkAdmittedPath(t, serve(t, o))
}

func TestUpstream(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "from upstream")
	}))
	t.Cleanup(up.Close)
	o, err := parse([]string{"-upstream", up.URL}, io.Discard)
	require.NoError(t, err)
	_, b := get(t, serve(t, o), "")
	assert.Equal(t, "from upstream", b)

	o.upstream = "127.0.0.1:1"
	_, _, err = newHandler(context.Background(), o, testKey, slog.New(slog.DiscardHandler))
	assert.Error(t, err)
}

func TestRedis(t *testing.T) {
	url := os.Getenv("WAITINGROOM_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	ropts, err := redis.ParseURL(url)
	require.NoError(t, err)
	c := redis.NewClient(ropts)
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		if os.Getenv(requireEnv) == "1" {
			t.Fatalf("Redis is required (%s=1) but not reachable at %s: %v", requireEnv, url, err)
		}
		t.Skipf("skipping: Redis not reachable at %s (%v); start it or set WAITINGROOM_REDIS_URL, and set %s=1 to make this a failure", url, err, requireEnv)
	}
	o, err := parse([]string{"-mode", "redis", "-redis", url}, io.Discard)
	require.NoError(t, err)
	checkAdmittedPath(t, serve(t, o))
	n, err := c.Exists(context.Background(), redisKeyPrefix+o.name).Result()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "the room's state is in Redis")
	c.Del(context.Background(), redisKeyPrefix+o.name)
}
