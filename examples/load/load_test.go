package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

func TestCheckTarget(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080/", true},
		{"http://127.0.0.2/", true},
		{"http://[::1]:8080/x", true},
		{"http://localhost:8080/", true},
		{"https://127.0.0.1/", true},
		{"http://192.0.2.1/", false},
		{"http://example.com/", false},
		{"http://10.0.0.1:8080/", false},
		{"http://[::ffff:8.8.8.8]/", false},
		{"ftp://127.0.0.1/", false},
		{"127.0.0.1:8080", false},
	} {
		_, err := checkTarget(tc.url)
		assert.Equal(t, tc.ok, err == nil, "%s: %v", tc.url, err)
	}
}

func TestLoopbackOnly(t *testing.T) {
	assert.NoError(t, loopbackOnly("tcp", "127.0.0.1:80", nil))
	assert.NoError(t, loopbackOnly("tcp6", "[::1]:80", nil))
	assert.ErrorIs(t, loopbackOnly("tcp", "192.0.2.1:80", nil), errNotLoopback)
}

func TestParse(t *testing.T) {
	o, err := parse([]string{"-clients", "3", "-accept", "json", "-interval", "0"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 3, o.clients)
	assert.True(t, o.json)
	assert.Zero(t, o.interval)
	for _, args := range [][]string{
		{"-url", "http://192.0.2.1/"},
		{"-clients", "0"},
		{"-requests", "0"},
		{"-duration", "0s"},
		{"-accept", "xml"},
		{"-interval", "-1s"},
		{"extra"},
	} {
		_, err := parse(args, io.Discard)
		assert.Error(t, err, "%q", args)
	}
}

func TestClassify(t *testing.T) {
	resp := func(h map[string]string) *http.Response {
		r := &http.Response{StatusCode: 200, Header: http.Header{}}
		for k, v := range h {
			r.Header.Set(k, v)
		}
		return r
	}
	for _, tc := range []struct {
		name    string
		resp    *http.Response
		body    string
		out     outcome
		refresh time.Duration
	}{
		{"app", resp(nil), "hello", served, 0},
		{"html waiting", resp(map[string]string{"Refresh": "21", "Content-Type": "text/html"}), "<html>", waiting, 21 * time.Second},
		{"refresh with url", resp(map[string]string{"Refresh": "3; url=/"}), "", waiting, 3 * time.Second},
		{"refresh floor", resp(map[string]string{"Refresh": "0"}), "", waiting, time.Second},
		{"json waiting", resp(map[string]string{"Refresh": "19", "Content-Type": "application/json"}),
			`{"waitingRoom":{"inWaitingRoom":true,"refreshIntervalSeconds":7}}`, waiting, 7 * time.Second},
		{"json closed", resp(map[string]string{"Content-Type": "application/json"}),
			`{"waitingRoom":{"inWaitingRoom":true,"isRejectQueue":true}}`, closed, 0},
		{"html closed", resp(map[string]string{"Cache-Control": "no-store", "Vary": "Accept", "Content-Type": "text/html"}), "<html>", closed, 0},
		{"app json", resp(map[string]string{"Content-Type": "application/json"}), `{"waitingRoom":1}`, served, 0},
	} {
		out, refresh := classify(tc.resp, []byte(tc.body), "waitingRoom")
		assert.Equal(t, tc.out, out, tc.name)
		assert.Equal(t, tc.refresh, refresh, tc.name)
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	assert.Equal(t, time.Duration(50), percentile(d, 0.5))
	assert.Equal(t, time.Duration(99), percentile(d, 0.99))
	assert.Equal(t, time.Duration(100), percentile(d, 1))
	assert.Zero(t, percentile(nil, 0.5))
}

// TestRunRoom runs the tool for 2 s against a room that lets 3 visitors
// in: they browse and leave; everyone else waits, coming back only when
// the room says.
func TestRunRoom(t *testing.T) {
	for _, accept := range []string{"html", "json"} {
		t.Run(accept, func(t *testing.T) {
			t.Parallel()
			room, err := waitingroom.New(waitingroom.Config{
				Name: "load",
				Settings: waitingroom.Settings{
					TotalActiveUsers:  3,
					NewUsersPerMinute: 3,
				},
				RefreshInterval: time.Second,
				Keys:            [][]byte{[]byte("load test key: 32 bytes or more, tests only")},
				Logger:          slog.New(slog.DiscardHandler),
			}, memstore.New())
			require.NoError(t, err)
			t.Cleanup(func() { _ = room.Close() })
			require.NoError(t, room.Sync(context.Background()))
			srv := httptest.NewServer(room.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = io.WriteString(w, "hello world\n")
			})))
			t.Cleanup(srv.Close)

			o, err := parse([]string{"-url", srv.URL + "/", "-clients", "12", "-duration", "2s",
				"-interval", "50ms", "-browse", "400ms", "-accept", accept}, io.Discard)
			require.NoError(t, err)
			res, err := run(context.Background(), o)
			require.NoError(t, err)

			assert.Equal(t, "duration", res.stoppedBy)
			assert.GreaterOrEqual(t, res.elapsed, 2*time.Second)
			assert.Less(t, res.elapsed, 5*time.Second)
			assert.Zero(t, res.failed, "first error: %v", res.firstErr)
			assert.Equal(t, map[int]int{200: len(res.latencies)}, res.status)
			assert.Equal(t, len(res.latencies), res.served+res.waiting+res.closed)
			assert.Zero(t, res.closed)

			// At most 3 visitors get in; each browses for 400 ms, a
			// request every 50 ms, then leaves.
			assert.GreaterOrEqual(t, res.admitted, 1)
			assert.LessOrEqual(t, res.admitted, 3)
			assert.GreaterOrEqual(t, res.left, 1)
			assert.LessOrEqual(t, res.served, res.admitted*(400/50+2))
			// Everyone else waits, and comes back after the refresh
			// interval (at least a second): at most 3 requests each in 2 s.
			assert.Positive(t, res.waiting)
			assert.LessOrEqual(t, res.waiting, 3*(res.arrived-res.admitted))
			assert.Positive(t, res.waitingAtEnd)
			assert.Equal(t, res.arrived, res.left+res.waitingAtEnd+res.browsingAtEnd)

			var out bytes.Buffer
			res.print(&out, o)
			for _, want := range []string{"throughput", "p50", "p99", "status       200: ", "waiting", "let in"} {
				assert.Contains(t, out.String(), want)
			}
			t.Log("\n" + out.String())
		})
	}
}

// TestRunBudget stops at -requests.
func TestRunBudget(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "hello world\n")
	}))
	t.Cleanup(srv.Close)
	o, err := parse([]string{"-url", srv.URL, "-clients", "4", "-requests", "50", "-interval", "0", "-duration", "10s"}, io.Discard)
	require.NoError(t, err)
	res, err := run(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, "requests", res.stoppedBy)
	assert.LessOrEqual(t, len(res.latencies), 50)
	assert.GreaterOrEqual(t, len(res.latencies), 50-4) // requests cut off by the end are not counted
	assert.Equal(t, len(res.latencies), res.served)
	assert.Less(t, res.elapsed, 5*time.Second)
}

// TestRunRefusesRemote never connects anywhere but loopback.
func TestRunRefusesRemote(t *testing.T) {
	_, err := run(context.Background(), options{url: "http://192.0.2.1/", clients: 1, requests: 1, duration: time.Second, timeout: time.Second})
	assert.ErrorIs(t, err, errNotLoopback)
	assert.True(t, strings.Contains(err.Error(), "loopback"))
}
