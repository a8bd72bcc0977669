package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/servicetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seen is what the test upstream saw of a request.
type seen struct {
	Path   string      `json:"path"`
	Host   string      `json:"host"`
	Header http.Header `json:"header"`
}

// upstream starts an application that answers "upstream " and what it saw
// of the request as JSON, and returns its URL.
func upstream(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := json.Marshal(seen{Path: r.URL.Path, Host: r.Host, Header: r.Header})
		_, _ = io.WriteString(w, "upstream "+string(b))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// do sends req with a client of its own, with no cookies, and returns the
// response and its body.
func do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func TestForwardedHeaders(t *testing.T) {
	noEnv(t)
	up := upstream(t)
	upHost := strings.TrimPrefix(up, "http://")
	trusted := writeFile(t, "trusted.yaml", "trustedProxies: [127.0.0.0/8, '::1/128']\n")
	for _, tc := range []struct {
		name    string
		args    []string
		header  map[string]string // sent by the client
		host    string            // the Host header the upstream gets
		xff     string            // X-Forwarded-For the upstream gets
		xfHost  string
		xfProto string
	}{
		{name: "defaults: the client's Host", host: "shop.example", xff: "127.0.0.1", xfHost: "shop.example", xfProto: "http"},
		{name: "-host upstream", args: []string{"-host", "upstream"}, host: upHost, xff: "127.0.0.1", xfHost: "shop.example", xfProto: "http"},
		{name: "-https", args: []string{"-https"}, host: "shop.example", xff: "127.0.0.1", xfHost: "shop.example", xfProto: "https"},
		{
			name:   "an untrusted client's headers are dropped",
			header: map[string]string{"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https", "Forwarded": "for=203.0.113.7"},
			host:   "shop.example", xff: "127.0.0.1", xfHost: "shop.example", xfProto: "http",
		},
		{
			name:   "a trusted proxy's headers are extended",
			args:   []string{"-config", trusted},
			header: map[string]string{"X-Forwarded-For": "203.0.113.7, 10.1.2.3", "X-Forwarded-Host": "www.shop.example", "X-Forwarded-Proto": "https"},
			host:   "shop.example", xff: "203.0.113.7, 10.1.2.3, 127.0.0.1", xfHost: "www.shop.example", xfProto: "https",
		},
		{
			name: "-https wins over a trusted proxy's proto", args: []string{"-config", trusted, "-https"},
			header: map[string]string{"X-Forwarded-Proto": "http"},
			host:   "shop.example", xff: "127.0.0.1", xfHost: "shop.example", xfProto: "https",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := start(t, append([]string{"-upstream", up + "/app", "-key", hexKey}, tc.args...)...)
			req, err := http.NewRequest(http.MethodGet, base+"/shop?q=1", nil)
			require.NoError(t, err)
			req.Host = "shop.example"
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, body := do(t, req)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var got seen
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(body, "upstream ")), &got), body)
			assert.Equal(t, "/app/shop", got.Path, "the upstream URL's path is a base")
			assert.Equal(t, tc.host, got.Host)
			assert.Equal(t, tc.xff, got.Header.Get("X-Forwarded-For"))
			assert.Equal(t, tc.xfHost, got.Header.Get("X-Forwarded-Host"))
			assert.Equal(t, tc.xfProto, got.Header.Get("X-Forwarded-Proto"))
			assert.Empty(t, got.Header.Get("Forwarded"))
		})
	}
}

func TestHTTPSCookie(t *testing.T) {
	up := upstream(t)
	for _, tc := range []struct {
		name        string
		args        []string
		secure      bool
		sameSite    http.SameSite
		partitioned bool
	}{
		{"plain HTTP", nil, false, http.SameSiteLaxMode, false},
		{"-https", []string{"-https"}, true, http.SameSiteNoneMode, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := start(t, append([]string{"-upstream", up, "-key", hexKey}, tc.args...)...)
			resp, _ := get(t, &http.Client{}, base+"/")
			require.Len(t, resp.Cookies(), 1)
			c := resp.Cookies()[0]
			assert.Equal(t, tc.secure, c.Secure)
			assert.Equal(t, tc.sameSite, c.SameSite)
			assert.Equal(t, tc.partitioned, c.Partitioned)
			assert.True(t, c.HttpOnly)
		})
	}
}

func TestTemplate(t *testing.T) {
	base := start(t, "-demo", "-key", hexKey, "-template", "testdata/page.mustache", "-total-active-users", "1", "-new-users-per-minute", "1")
	_, body := get(t, browser(t), base+"/")
	require.Contains(t, body, "You're in")
	resp, body := get(t, browser(t), base+"/")
	assert.NotEmpty(t, resp.Header.Get("Refresh"))
	assert.Contains(t, body, "<h1>Almost there</h1>")
}

// TestStreaming checks that a response the upstream writes in parts
// arrives in parts: the upstream writes its second part only once the
// client has read the first through the proxy.
func TestStreaming(t *testing.T) {
	for _, contentType := range []string{"text/plain", "text/event-stream"} {
		t.Run(contentType, func(t *testing.T) {
			release := make(chan struct{})
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", contentType)
				_, _ = io.WriteString(w, "data: first\n\n")
				_ = http.NewResponseController(w).Flush()
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
				_, _ = io.WriteString(w, "data: second\n\n")
			}))
			defer up.Close()
			base := start(t, "-upstream", up.URL, "-key", hexKey)
			resp, err := http.Get(base + "/events")
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Empty(t, resp.Header.Get("Content-Length"))

			r := bufio.NewReader(resp.Body)
			first := make(chan string, 1)
			go func() {
				line, _ := r.ReadString('\n')
				first <- line
			}()
			select {
			case line := <-first:
				assert.Equal(t, "data: first\n", line)
			case <-time.After(5 * time.Second):
				close(release)
				t.Fatal("the first part did not arrive before the upstream finished: the proxy buffers")
			}
			close(release)
			rest, err := io.ReadAll(r)
			require.NoError(t, err)
			assert.Equal(t, "\ndata: second\n\n", string(rest))
		})
	}
}

// echoUpgrade is an upstream that switches protocols on a WebSocket
// upgrade and then echoes every byte; other requests get "plain".
type echoUpgrade struct{ upgrades atomic.Int32 }

func (e *echoUpgrade) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		_, _ = io.WriteString(w, "plain")
		return
	}
	e.upgrades.Add(1)
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	_ = rw.Flush()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.Copy(conn, rw)
}

// upgrade sends a WebSocket upgrade for /ws over a connection of its own
// to addr, with cookie if not empty, and returns the connection, a reader
// on it and the response.
func upgrade(t *testing.T, addr, cookie string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	req := "GET /ws HTTP/1.1\r\nHost: " + addr + "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n" +
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	if cookie != "" {
		req += "Cookie: " + cookie + "\r\n"
	}
	_, err = io.WriteString(conn, req+"\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	return conn, br, resp
}

func TestWebSocket(t *testing.T) {
	echo := &echoUpgrade{}
	up := httptest.NewServer(echo)
	defer up.Close()
	base := start(t, "-upstream", up.URL, "-key", hexKey, "-total-active-users", "1", "-new-users-per-minute", "1")
	addr := strings.TrimPrefix(base, "http://")

	// The first visitor is admitted; their cookie carries the upgrade.
	admitted := browser(t)
	_, body := get(t, admitted, base+"/")
	require.Equal(t, "plain", body)
	u, err := url.Parse(base)
	require.NoError(t, err)
	var cookies []string
	for _, c := range admitted.Jar.Cookies(u) {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	require.Len(t, cookies, 1)

	conn, br, resp := upgrade(t, addr, cookies[0])
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	assert.Equal(t, "websocket", resp.Header.Get("Upgrade"))
	for _, msg := range []string{"ping\n", "pong and more\n"} {
		_, err = io.WriteString(conn, msg)
		require.NoError(t, err)
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, msg, line, "bytes flow both ways")
	}
	assert.Equal(t, int32(1), echo.upgrades.Load())

	// A new visitor waits: their upgrade gets the waiting page, and the
	// upstream never sees it.
	_, br, resp = upgrade(t, addr, "")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.NotEmpty(t, resp.Header.Get("Refresh"))
	page, err := io.ReadAll(io.LimitReader(br, resp.ContentLength))
	require.NoError(t, err)
	assert.Contains(t, strings.ToLower(string(page)), "waiting")
	assert.Equal(t, int32(1), echo.upgrades.Load())
}

func TestUnreachableUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now

	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan int, 1)
	var stderr syncBuffer
	go func() {
		done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-upstream", "http://" + addr, "-key", hexKey}, io.Discard, &stderr, ready)
	}()
	base := "http://" + <-ready
	defer func() { cancel(); assert.Equal(t, 0, <-done) }()

	for range 3 {
		resp, body := get(t, browser(t), base+"/checkout")
		assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
		assert.Equal(t, "Bad Gateway\n", body, "no internals")
		assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	}
	logged := stderr.String()
	assert.Contains(t, logged, "upstream error")
	assert.Contains(t, logged, "connection refused", "the log has the details")
}

func TestUpstreamErrorsLogAtMostOnceAPeriod(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	u := &upstreamErrors{log: slog.New(slog.NewTextHandler(&buf, nil)), every: time.Second, now: func() time.Time { return now }}
	req := httptest.NewRequest(http.MethodGet, "/x", nil)
	for _, step := range []time.Duration{0, 100 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, time.Second} {
		now = now.Add(step)
		w := httptest.NewRecorder()
		u.handle(w, req, errors.New("dial tcp: refused"))
		assert.Equal(t, http.StatusBadGateway, w.Code)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 3, buf.String())
	assert.Contains(t, lines[0], "errors_not_logged=0")
	assert.Contains(t, lines[1], "errors_not_logged=2")
	assert.Contains(t, lines[2], "errors_not_logged=0")

	// A client that went away is not logged.
	buf.Reset()
	now = now.Add(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	u.handle(httptest.NewRecorder(), req.WithContext(ctx), context.Canceled)
	assert.Empty(t, buf.String())
}

// TestGracefulShutdown stops the proxy (as SIGTERM does) while a slow
// request is in flight: new connections are refused at once, the slow
// request still completes, and the command exits with 0.
func TestGracefulShutdown(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(entered) })
		<-release
		_, _ = io.WriteString(w, "slow and done")
	}))
	defer up.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready, done := make(chan string, 1), make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-upstream", up.URL, "-key", hexKey}, io.Discard, io.Discard, ready)
	}()
	addr := <-ready

	type result struct {
		status int
		body   string
		err    error
	}
	slow := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/slow")
		if err != nil {
			slow <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		slow <- result{resp.StatusCode, string(b), err}
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow request did not reach the upstream")
	}

	cancel() // what SIGTERM does
	refused := func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return true
		}
		_ = c.Close()
		return false
	}
	require.Eventually(t, refused, 5*time.Second, 5*time.Millisecond, "new connections are refused once stopping")
	select {
	case r := <-slow:
		t.Fatalf("the slow request ended before the upstream answered: %+v", r)
	case code := <-done:
		t.Fatalf("exited with %d before the slow request finished", code)
	default:
	}

	close(release)
	select {
	case r := <-slow:
		require.NoError(t, r.err)
		assert.Equal(t, http.StatusOK, r.status)
		assert.Equal(t, "slow and done", r.body)
	case <-time.After(10 * time.Second):
		t.Fatal("the slow request did not finish")
	}
	select {
	case code := <-done:
		assert.Equal(t, 0, code)
	case <-time.After(10 * time.Second):
		t.Fatal("did not exit")
	}
	assert.True(t, refused(), "still refused after exiting")
}

// syncBuffer collects a running program's output.
type syncBuffer = servicetest.Buffer

// otherKey is a key other than hexKey, in base64.
const otherKey = "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8="

func TestCookieKeys(t *testing.T) {
	const other = otherKey
	short := strings.Repeat("ab", 16)
	for _, tc := range []struct {
		name       string
		flag       string
		keys, key  string // environment
		want       int    // keys
		wantErr    string
		notWantErr string
	}{
		{name: "none"},
		{name: "-key", flag: hexKey, want: 1},
		{name: "-key list", flag: hexKey + ", " + other, want: 2},
		{name: "-key before the environment", flag: hexKey, keys: "x,y", key: "z", want: 1},
		{name: "WAITINGROOM_KEY", key: hexKey, want: 1},
		{name: "WAITINGROOM_KEYS", keys: other + "," + hexKey, want: 2},
		{name: "both variables", keys: hexKey, key: hexKey, wantErr: "waitingroom: both WAITINGROOM_KEYS and WAITINGROOM_KEY are set"},
		{name: "bad second key", keys: hexKey + ",!!" + hexKey, wantErr: "waitingroom: key 2 of 2: neither hex nor base64 (from WAITINGROOM_KEYS)", notWantErr: hexKey},
		{name: "empty key", flag: hexKey + ",", wantErr: "waitingroom: key 2 of 2: empty (from -key)"},
		{name: "short key", key: short, wantErr: "waitingroom: key: 16 bytes; a key must be at least 32 (from WAITINGROOM_KEY)", notWantErr: short},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("WAITINGROOM_KEYS", tc.keys)
			t.Setenv("WAITINGROOM_KEY", tc.key)
			keys, err := cookieKeys(tc.flag)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				if tc.notWantErr != "" {
					assert.NotContains(t, err.Error(), tc.notWantErr)
				}
				return
			}
			require.NoError(t, err)
			assert.Len(t, keys, tc.want)
		})
	}
	t.Run("order", func(t *testing.T) {
		keys, err := cookieKeys(other + "," + hexKey)
		require.NoError(t, err)
		want, err := waitingroom.ParseKeys(other)
		require.NoError(t, err)
		assert.Equal(t, want[0], keys[0], "the first key encrypts")
	})
}

// TestKeyRotation shows a rotation from an old key to a new one: a proxy
// with "-key new,old" reads the cookies that a proxy with the old key
// issued, and seals its own with the new key, which a proxy knowing only
// the old key cannot read. (Cookies do not depend on the port, so one
// browser carries its cookie to every proxy here.)
func TestKeyRotation(t *testing.T) {
	noEnv(t)
	const newKey = otherKey
	room := func(limit string, key string) string {
		return start(t, "-demo", "-total-active-users", limit, "-new-users-per-minute", limit, "-key", key)
	}
	oldProxy, rotated, newOnly := room("1", hexKey), room("2", newKey+","+hexKey), room("1", newKey)
	in := func(c *http.Client, base string) bool {
		_, body := get(t, c, base+"/")
		return strings.Contains(body, "You're in")
	}

	a := browser(t)
	require.True(t, in(a, oldProxy))
	require.False(t, in(browser(t), oldProxy), "the old proxy is full")
	assert.True(t, in(a, rotated), "the rotated proxy reads the old key's cookie")

	d := browser(t)
	require.True(t, in(d, rotated), "admitted by the rotated proxy, with a cookie under the new key")
	require.True(t, in(browser(t), newOnly))
	require.False(t, in(browser(t), newOnly), "the new proxy is full")
	assert.True(t, in(d, newOnly), "the new key reads the rotated proxy's cookie")
	assert.False(t, in(d, oldProxy), "the old key alone does not: a new visitor, and the old proxy is full")
}
