package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// giveUp is how long a test waits for the proxy to close a connection
// before it decides the proxy never will: far above the timeouts the
// tests set (tens of milliseconds), so that a loaded machine does not fail
// them, and reached only when the proxy keeps the connection open.
const giveUp = 3 * time.Second

// bodyUpstream starts an application that reads the whole request body,
// waits for the duration in the query's delay, if any, and answers with
// how many bytes it read.
func bodyUpstream(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if d, err := time.ParseDuration(r.URL.Query().Get("delay")); err == nil {
			time.Sleep(d)
		}
		fmt.Fprintf(w, "read %d", n)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// rawConn is a client's connection to the proxy, spoken by hand.
type rawConn struct {
	t      *testing.T
	c      net.Conn
	r      *bufio.Reader
	dialed time.Time // before the proxy accepted it: every timeout starts later
}

func dialRaw(t *testing.T, base string) *rawConn {
	t.Helper()
	dialed := time.Now()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return &rawConn{t: t, c: c, r: bufio.NewReader(c), dialed: dialed}
}

func (rc *rawConn) send(s string) {
	rc.t.Helper()
	_, err := io.WriteString(rc.c, s)
	require.NoError(rc.t, err)
}

// response reads one response and its body.
func (rc *rawConn) response() (*http.Response, string) {
	rc.t.Helper()
	require.NoError(rc.t, rc.c.SetReadDeadline(time.Now().Add(giveUp)))
	resp, err := http.ReadResponse(rc.r, nil)
	require.NoError(rc.t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(rc.t, err)
	require.NoError(rc.t, resp.Body.Close())
	return resp, string(b)
}

// closed reads, discarding whatever comes, until the proxy closes the
// connection, and returns how long after the dial that was: at least any
// timeout the proxy applied, however late this client got to its part
// on a busy machine. It fails the test if the proxy keeps the connection
// open for giveUp.
func (rc *rawConn) closed() time.Duration {
	rc.t.Helper()
	require.NoError(rc.t, rc.c.SetReadDeadline(time.Now().Add(giveUp)))
	_, err := io.Copy(io.Discard, rc.r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		rc.t.Fatalf("the proxy kept the connection open for %v", giveUp)
	}
	return time.Since(rc.dialed)
}

const postHeader = "POST /upload HTTP/1.1\r\nHost: shop.test\r\nContent-Type: application/octet-stream\r\n"

// TestConnectionTimeouts runs the proxy with short connection limits and
// speaks to it over real loopback connections: a client that stays idle,
// never finishes its headers or stalls in its body loses its connection
// within the limit, while a slow client that keeps sending, a slow
// upstream and a reused keep-alive connection are served.
func TestConnectionTimeouts(t *testing.T) {
	noEnv(t)
	up := bodyUpstream(t)
	const short = 50 * time.Millisecond
	for _, tc := range []struct {
		name string
		args []string
		// talk speaks to the proxy; it returns after the proxy closed the
		// connection, or after the last response it checks.
		talk func(t *testing.T, rc *rawConn)
	}{
		{
			name: "an idle keep-alive connection is closed",
			args: []string{"-idle-timeout", short.String()},
			talk: func(t *testing.T, rc *rawConn) {
				rc.send("GET /healthz HTTP/1.1\r\nHost: shop.test\r\n\r\n")
				resp, body := rc.response()
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Equal(t, "ok\n", body)
				assert.False(t, resp.Close, "the connection is kept alive")
				assert.GreaterOrEqual(t, rc.closed(), short/2, "closed by the idle timeout, not at once")
			},
		},
		{
			name: "a reused keep-alive connection is served",
			args: []string{"-idle-timeout", "2s"},
			talk: func(t *testing.T, rc *rawConn) {
				for range 3 {
					rc.send("GET /healthz HTTP/1.1\r\nHost: shop.test\r\n\r\n")
					resp, _ := rc.response()
					assert.Equal(t, http.StatusOK, resp.StatusCode)
					time.Sleep(5 * time.Millisecond)
				}
			},
		},
		{
			name: "headers never finished",
			args: []string{"-read-header-timeout", short.String()},
			talk: func(t *testing.T, rc *rawConn) {
				rc.send("GET / HTTP/1.1\r\nHost: shop.test\r\nX-Slow: 1\r\n")
				assert.GreaterOrEqual(t, rc.closed(), short/2)
			},
		},
		{
			name: "nothing sent after connecting",
			args: []string{"-read-header-timeout", short.String()},
			talk: func(t *testing.T, rc *rawConn) {
				assert.GreaterOrEqual(t, rc.closed(), short/2)
			},
		},
		{
			name: "a stalled body the upstream reads",
			args: []string{"-body-timeout", short.String()},
			talk: func(t *testing.T, rc *rawConn) {
				rc.send(postHeader + "Content-Length: 100\r\n\r\n0123456789")
				rc.closed()
			},
		},
		{
			name: "a stalled body that is not forwarded",
			args: []string{"-body-timeout", short.String(), "-queueing-method", "reject"},
			talk: func(t *testing.T, rc *rawConn) {
				rc.send(postHeader + "Content-Length: 100\r\n\r\n0123456789")
				rc.closed()
			},
		},
		{
			name: "a stalled chunked body",
			args: []string{"-body-timeout", short.String()},
			talk: func(t *testing.T, rc *rawConn) {
				rc.send(postHeader + "Transfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n")
				rc.closed()
			},
		},
		{
			name: "a slow upload that keeps moving is not cut off",
			args: []string{"-body-timeout", "1s"},
			talk: func(t *testing.T, rc *rawConn) {
				rc.send(postHeader + "Content-Length: 80\r\n\r\n")
				// 8 × 200 ms, well past the limit, each pause a fifth of
				// it: a loaded machine's scheduling does not reach it.
				for range 8 {
					time.Sleep(200 * time.Millisecond)
					rc.send("0123456789")
				}
				resp, body := rc.response()
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Equal(t, "read 80", body)
			},
		},
		{
			name: "an upstream slow to answer after the body is not cut off",
			args: []string{"-body-timeout", "20ms"},
			talk: func(t *testing.T, rc *rawConn) {
				rc.send("POST /upload?delay=150ms HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 10\r\n\r\n0123456789")
				resp, body := rc.response()
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Equal(t, "read 10", body)
				// The connection is still good for another request.
				rc.send("POST /upload HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 3\r\n\r\nabc")
				resp, body = rc.response()
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Equal(t, "read 3", body)
			},
		},
		{
			name: "a whole-request read timeout does not cut off a slow upstream",
			args: []string{"-read-timeout", short.String()},
			talk: func(t *testing.T, rc *rawConn) {
				rc.send("POST /upload?delay=150ms HTTP/1.1\r\nHost: shop.test\r\nContent-Length: 10\r\n\r\n0123456789")
				resp, body := rc.response()
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Equal(t, "read 10", body)
			},
		},
		{
			name: "a whole-request read timeout cuts off a slow upload",
			args: []string{"-read-timeout", short.String()},
			talk: func(t *testing.T, rc *rawConn) {
				rc.send(postHeader + "Content-Length: 80\r\n\r\n")
				for range 8 {
					time.Sleep(20 * time.Millisecond)
					if _, err := io.WriteString(rc.c, "0123456789"); err != nil {
						break // closed already
					}
				}
				rc.closed()
			},
		},
		{
			name: "headers over max-header-bytes",
			args: []string{"-max-header-bytes", "1024"},
			talk: func(t *testing.T, rc *rawConn) {
				// Go allows 4 KiB beyond the limit.
				rc.send("GET / HTTP/1.1\r\nHost: shop.test\r\nX-Big: " + strings.Repeat("a", 8<<10) + "\r\n\r\n")
				resp, _ := rc.response()
				assert.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
			},
		},
		{
			name: "headers within max-header-bytes",
			args: []string{"-max-header-bytes", "1024"},
			talk: func(t *testing.T, rc *rawConn) {
				rc.send("GET /healthz HTTP/1.1\r\nHost: shop.test\r\nX-Big: " + strings.Repeat("a", 512) + "\r\n\r\n")
				resp, _ := rc.response()
				assert.Equal(t, http.StatusOK, resp.StatusCode)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := start(t, append([]string{"-upstream", up, "-key", hexKey}, tc.args...)...)
			tc.talk(t, dialRaw(t, base))
		})
	}
}

// TestConnectionLimitSettings: the connection limits have their defaults,
// come from the flags and from the config file (flags first), and a limit
// that would leave connections open for ever, or a negative one, exits
// with status 2.
func TestConnectionLimitSettings(t *testing.T) {
	noEnv(t)
	defaults := connLimits{readHeader: 10 * time.Second, idle: 120 * time.Second, body: 60 * time.Second, maxHeaderBytes: 64 << 10}
	for _, tc := range []struct {
		name string
		args []string
		file string // a YAML config file, if any
		want connLimits
		err  string // the error; $FILE stands for the file's path
	}{
		{name: "defaults", want: defaults},
		{
			name: "flags",
			args: []string{"-read-header-timeout", "5s", "-idle-timeout", "1m", "-body-timeout", "0", "-read-timeout", "10m", "-max-header-bytes", "16384"},
			want: connLimits{readHeader: 5 * time.Second, idle: time.Minute, read: 10 * time.Minute, maxHeaderBytes: 16 << 10},
		},
		{
			name: "file",
			file: "readHeaderTimeout: 3s\nidleTimeout: 30s\nbodyTimeout: 20s\nreadTimeout: 1h\nmaxHeaderBytes: 32768\n",
			want: connLimits{readHeader: 3 * time.Second, idle: 30 * time.Second, body: 20 * time.Second, read: time.Hour, maxHeaderBytes: 32 << 10},
		},
		{
			name: "flags override the file",
			args: []string{"-idle-timeout", "45s"},
			file: "idleTimeout: 30s\nbodyTimeout: 20s\n",
			want: connLimits{readHeader: 10 * time.Second, idle: 45 * time.Second, body: 20 * time.Second, maxHeaderBytes: 64 << 10},
		},
		{name: "no header timeout", args: []string{"-read-header-timeout", "0"}, err: "-read-header-timeout must be > 0, got 0s: a client that never finishes its headers"},
		{name: "no idle timeout", args: []string{"-idle-timeout", "0"}, err: "-idle-timeout must be > 0, got 0s: an idle keep-alive connection would stay open for ever"},
		{name: "no idle timeout in the file", file: "idleTimeout: 0s\n", err: "$FILE:1:14: idleTimeout must be > 0"},
		{name: "negative body timeout", args: []string{"-body-timeout", "-1s"}, err: "-body-timeout must be ≥ 0 (0 for none), got -1s"},
		{name: "negative read timeout", args: []string{"-read-timeout", "-1s"}, err: "-read-timeout must be ≥ 0"},
		{name: "no header bytes", args: []string{"-max-header-bytes", "0"}, err: "-max-header-bytes must be > 0, got 0"},
		{name: "header bytes not a number", file: "maxHeaderBytes: 64k\n", err: "$FILE:1:17: maxHeaderBytes: want a whole number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, file := demoArgs(t, tc.args, tc.file)
			o, err := parse(args, io.Discard)
			if tc.err != "" {
				require.ErrorIs(t, err, errUsage)
				assert.ErrorContains(t, err, strings.ReplaceAll(tc.err, "$FILE", file))
				var stderr bytes.Buffer
				assert.Equal(t, 2, run(t.Context(), append(args, "-key", hexKey), io.Discard, &stderr, nil))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, o.limits)
		})
	}
}

// TestAdminConnectionTimeouts: the admin address closes idle and stalled
// connections as the public one does.
func TestAdminConnectionTimeouts(t *testing.T) {
	noEnv(t)
	const short = 50 * time.Millisecond
	for _, tc := range []struct {
		name string
		args []string
		talk func(t *testing.T, rc *rawConn)
	}{
		{
			name: "an idle keep-alive connection is closed",
			args: []string{"-idle-timeout", short.String()},
			talk: func(t *testing.T, rc *rawConn) {
				rc.send("GET /status HTTP/1.1\r\nHost: admin.test\r\n\r\n")
				resp, _ := rc.response()
				assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
				assert.GreaterOrEqual(t, rc.closed(), short/2)
			},
		},
		{
			name: "headers never finished",
			args: []string{"-read-header-timeout", short.String()},
			talk: func(t *testing.T, rc *rawConn) {
				rc.send("GET /status HTTP/1.1\r\nHost: admin.test\r\n")
				assert.GreaterOrEqual(t, rc.closed(), short/2)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			ready, done := make(chan string, 2), make(chan int, 1)
			args := append([]string{"-demo", "-key", hexKey, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0",
				"-admin-token", "0123456789abcdef-admin"}, tc.args...)
			var stderr syncBuffer
			go func() { done <- run(ctx, args, io.Discard, &stderr, ready) }()
			var admin string
			for range 2 { // the public address, then the admin one
				select {
				case admin = <-ready:
				case code := <-done:
					cancel()
					t.Fatalf("exited with %d: %s", code, stderr.String())
				case <-time.After(10 * time.Second):
					cancel()
					t.Fatal("did not start")
				}
			}
			defer func() { cancel(); assert.Equal(t, 0, <-done) }()
			tc.talk(t, dialRaw(t, "http://"+admin))
		})
	}
}
