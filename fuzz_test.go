package waitingroom

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/go-waitingroom/waitingroom/template"
)

// fuzzRooms are rooms in each mode a request can meet, all named "launch"
// with testKey, so one cookie is valid for every one of them. Their clock
// is set by each input; they sync when the input says so.
func fuzzRooms(t testing.TB, clk *clock) []*Room {
	var rooms []*Room
	for _, mutate := range []func(*Config){
		func(c *Config) { c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1 }, // FIFO, soon full
		func(c *Config) { c.QueueingMethod = Random; c.TotalActiveUsers, c.NewUsersPerMinute = 2, 1 },
		func(c *Config) { c.QueueAll = true; c.QueueingStatusCode = http.StatusTooManyRequests },
		func(c *Config) { c.QueueingMethod = Reject },
		func(c *Config) { c.QueueingMethod = Passthrough; c.DisableSessionRenewal = true },
		func(c *Config) { c.Suspended = true },
		func(c *Config) {
			c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
			c.Challenge = &challenge.Policy{Kind: challenge.PoW, Who: challenge.Everyone, OnFail: challenge.Infinite, Difficulty: 1}
		},
	} {
		cfg := baseConfig(clk)
		cfg.Page.NegotiateLanguage = true
		cfg.Bypass = []Rule{
			PathPrefix("/static/", "/favicon.ico"),
			All(Methods(http.MethodOptions), PathPrefixCaseSensitive("/api/")),
			Header("X-Monitor", func(v string) bool { return v == "s3cret-monitor-token" }),
		}
		nets, err := ClientNetworks("10.0.0.0/8", "2001:db8::/32")
		require.NoError(t, err)
		cfg.Bypass = append(cfg.Bypass, nets)
		cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}
		mutate(&cfg)
		rm, err := New(cfg, memstore.New())
		require.NoError(t, err)
		require.NoError(t, rm.Sync(context.Background()))
		rooms = append(rooms, rm)
	}
	return rooms
}

// fuzzCookies are valid cookies of the fuzz rooms, written at the fuzz
// clock's start (inputs never set the clock earlier), for the seeds.
func fuzzCookies(t testing.TB) (queued, admittedCookie string) {
	c := mustCodec(t, "__waitingroom_launch", testKey)
	start := newClock().Now().UnixMilli()
	queued = c.encode(cookieState{id: 1, bucket: secondOf(start), lastCheckIn: start, refresh: 20_000})
	admittedCookie = c.encode(cookieState{id: 2, bucket: secondOf(start), acceptedAt: start, lastCheckIn: start})
	return queued, admittedCookie
}

// FuzzCheck sends arbitrary requests to rooms in every mode: check decides
// one of the four outcomes without error, respond and Handler never panic
// and never answer 5xx, and a request that may not pass never reaches the
// application.
func FuzzCheck(f *testing.F) {
	queued, admittedCookie := fuzzCookies(f)
	type seed struct {
		method, path, cookie, accept, acceptLanguage, xff, remote string
		mode                                                      uint8
		ms                                                        uint32
		sync                                                      bool
	}
	for _, s := range []seed{
		{"GET", "/", "", "", "", "", "192.0.2.1:1234", 0, 0, true},
		{"GET", "/checkout", "__waitingroom_launch=" + queued, "application/json", "de-CH, de;q=0.9", "", "192.0.2.1:1234", 0, 20_000, true},
		{"GET", "/", "__waitingroom_launch=" + admittedCookie, "text/html", "ar", "", "[2001:db8::1]:443", 1, 61_000, true},
		{"POST", "/static/../checkout", "__waitingroom_launch=" + queued + "; __waitingroom_launch=x", "*/*", "*", "10.0.0.1", "192.168.1.1:80", 2, 300_001, false},
		{"HEAD", "/\xff\xfe", "__waitingroom_launch=\"" + admittedCookie + "\"", ";;;", ";q=x", "10.0.0.1, 192.168.0.9", "192.168.0.2:1", 3, 0, false},
		{"OPTIONS", "/api/x", "a=b\n__waitingroom_launch=" + queued, "application/json;q=0, text/html", "zh-Hant-TW", "garbage", "unix", 4, 3_600_000, true},
		{"CONNECT", "", "__waitingroom_launch=" + strings.Repeat("A", 300), strings.Repeat("application/json,", 300), strings.Repeat("en-US-x-y;q=0.1,", 300), "", "", 5, 1, true},
	} {
		f.Add(s.method, s.path, s.cookie, s.accept, s.acceptLanguage, s.xff, s.remote, s.mode, s.ms, s.sync)
	}
	clk := newClock()
	start := clk.Now()
	rooms := fuzzRooms(f, clk)
	f.Cleanup(func() {
		for _, rm := range rooms {
			_ = rm.Close()
		}
	})
	f.Fuzz(func(t *testing.T, method, path, cookie, accept, acceptLanguage, xff, remote string, mode uint8, ms uint32, sync bool) {
		clk.Set(start.Add(time.Duration(ms%(6*3600_000)) * time.Millisecond))
		rm := rooms[int(mode)%len(rooms)]
		if sync {
			require.NoError(t, rm.Sync(context.Background()))
		}
		newRequest := func() *http.Request {
			r := &http.Request{
				Method:     method,
				URL:        &url.URL{Path: path},
				Proto:      "HTTP/1.1",
				ProtoMajor: 1, ProtoMinor: 1,
				Header:     http.Header{},
				Host:       "example.com",
				RemoteAddr: remote,
				Body:       failingBody{t},
			}
			for _, c := range strings.Split(cookie, "\n") {
				r.Header.Add("Cookie", c)
			}
			r.Header.Set("Accept", accept)
			r.Header.Set("Accept-Language", acceptLanguage)
			r.Header.Set("X-Forwarded-For", xff)
			r.Header.Set(challenge.Header, xff) // an answer, too
			return r.WithContext(context.Background())
		}

		r := newRequest()
		d, err := rm.checkRequest(r)
		require.NoError(t, err)
		require.Contains(t, []outcome{outcomeAdmitted, outcomeWaiting, outcomeRejected, outcomeBypassed}, d.Outcome)
		if d.Outcome == outcomeWaiting {
			require.Positive(t, d.RefreshAfter)
		}
		w := httptest.NewRecorder()
		pass := rm.respond(w, r, d)
		require.Equal(t, d.pass(), pass)
		if !pass {
			require.Less(t, w.Code, 500)
			require.NotEmpty(t, w.Body.Bytes())
		}
		for _, c := range w.Result().Cookies() {
			require.Equal(t, rm.cookieName, c.Name)
			_, err := rm.codec.decode(c.Value)
			require.NoError(t, err, "the room sets only cookies it can read")
		}

		reached := false
		w = httptest.NewRecorder()
		rm.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true })).ServeHTTP(w, newRequest())
		require.Less(t, w.Code, 500)
		if !reached {
			require.NotEmpty(t, w.Body.Bytes(), "a request that does not pass gets a page")
		}
	})
}

// escapedSep separates the values at the head of the FuzzTemplateData
// template. It holds '<', which an escaped value never does, so the first
// separators in the output are these.
const escapedSep = "<|>"

// FuzzTemplateData renders hostile Data through a hostile custom template,
// as a room's waiting page and as JSON: New never panics on a template
// (it fails with ErrInvalidConfig or works), rendering never panics,
// {{variables}} are HTML-escaped and the JSON body round-trips.
func FuzzTemplateData(f *testing.F) {
	f.Add("<p>{{waitTimeFormatted}}</p>", "<script>alert(1)</script>", "\"'&<>", "fifo", "", "", "waitingRoom", "en", 10, uint16(0xffff))
	f.Add("{{#queueAll}}{{{waitTimeFormatted}}}{{/queueAll}}{{^queueAll}}{{&lastUpdated}}{{/queueAll}}", "&amp;", "</title>", "random\x00", "x", "y", "cf\"WaitingRoom", "ar", -1, uint16(8))
	f.Add("{{=<% %>=}}<% waitTimeFormatted %>{{lastUpdated}}", "\xff\xfe", "{{waitTime}}", "{{", "}}", "<!--", "", "zz", 1<<30, uint16(1))
	f.Add("{{#waitTimeFormatted}}{{.}}{{/waitTimeFormatted}}{{> partial}}", "a", "b", "c", "d", "e", "k", "de", 0, uint16(2))
	f.Add("{{#a}}{{#b}}{{#c}}{{/c}}{{/b}}{{/a}}{{! comment }}{{wr_title}}{{wr_lang}}", "\u202e", "javascript:x", "", "", "", "\u2028", "", 5, uint16(0))
	f.Add(strings.Repeat("{{#queueAll}}", 101)+strings.Repeat("{{/queueAll}}", 101), "", "", "", "", "", "", "", 0, uint16(8))
	f.Add("{{#inWaitingRoom}}", "", "", "", "", "", "", "", 0, uint16(0))

	logger := slog.New(slog.DiscardHandler)
	f.Fuzz(func(t *testing.T, src, formatted, updated, method, startFormatted, endFormatted, jsonKey, lang string, n int, flags uint16) {
		strs := []string{formatted, updated, method, startFormatted, endFormatted}
		head := "{{waitTimeFormatted}}" + escapedSep + "{{lastUpdated}}" + escapedSep + "{{queueingMethod}}" + escapedSep +
			"{{timeUntilEventStartFormatted}}" + escapedSep + "{{timeUntilEventEndFormatted}}" + escapedSep
		cfg := Config{
			Name: "launch", Settings: Settings{TotalActiveUsers: 1, NewUsersPerMinute: 1, Template: head + src}, Keys: [][]byte{testKey},
			SyncInterval: -1, Logger: logger, Page: template.Options{JSONKey: jsonKey},
		}
		rm, err := New(cfg, memstore.New())
		if err != nil {
			assert.ErrorIs(t, err, ErrInvalidConfig)
			return
		}
		defer rm.Close()
		bit := func(i int) bool { return flags&(1<<i) != 0 }
		d := &template.Data{
			InWaitingRoom: bit(0), WaitTimeKnown: bit(1), QueueIsFull: bit(2), QueueAll: bit(3),
			IsFIFOQueue: bit(4), IsRandomQueue: bit(5), IsPassthroughQueue: bit(6), IsRejectQueue: bit(7),
			IsEventActive: bit(8), IsEventPrequeueing: bit(9), ShuffleAtEventStart: bit(10),
			WaitTime: n, WaitTimeHours: n / 60, WaitTimeHourMinutes: n % 60,
			WaitTime25Percentile: n / 2, WaitTime50Percentile: n, WaitTime75Percentile: n * 2,
			RefreshIntervalSeconds: n, TimeUntilEventStart: -n, TimeUntilEventEnd: n,
			WaitTimeFormatted: formatted, LastUpdated: updated, QueueingMethod: method,
			TimeUntilEventStartFormatted: startFormatted, TimeUntilEventEndFormatted: endFormatted,
		}

		out, err := rm.render(rm.tmpl, d, lang, false, 0, new(bytes.Buffer))
		require.NoError(t, err)
		parts := strings.SplitN(string(out), escapedSep, len(strs)+1)
		require.Len(t, parts, len(strs)+1, "the head renders whatever follows it")
		for i, v := range strs {
			require.NotContains(t, parts[i], "<", "value %d unescaped", i)
			require.NotContains(t, parts[i], ">", "value %d unescaped", i)
			require.NotContains(t, parts[i], `"`, "value %d unescaped", i)
			require.NotContains(t, parts[i], "'", "value %d unescaped", i)
			require.Equal(t, strings.ReplaceAll(v, "\x00", "\uFFFD"), html.UnescapeString(parts[i]), "value %d", i)
		}
		again, err := rm.render(rm.tmpl, d, lang, false, 0, new(bytes.Buffer))
		require.NoError(t, err)
		require.Equal(t, out, again, "the cached page is the page")

		// The default page with the same values carries no markup of theirs:
		// it has as many markup characters as with harmless values (as empty
		// as the hostile ones: Mustache sections test strings trimmed).
		safe := *d
		for _, s := range []*string{&safe.WaitTimeFormatted, &safe.LastUpdated, &safe.QueueingMethod,
			&safe.TimeUntilEventStartFormatted, &safe.TimeUntilEventEndFormatted} {
			if strings.TrimSpace(*s) != "" {
				*s = "x"
			}
		}
		var hostile, harmless strings.Builder
		require.NoError(t, template.Default().Render(&hostile, d, lang))
		require.NoError(t, template.Default().Render(&harmless, &safe, lang))
		for _, c := range []string{"<", ">", `"`, "'"} {
			require.Equal(t, strings.Count(harmless.String(), c), strings.Count(hostile.String(), c), "%q in the default page", c)
		}

		body, err := rm.render(rm.tmpl, d, lang, true, 0, new(bytes.Buffer))
		require.NoError(t, err)
		var got map[string]template.Data
		require.NoError(t, json.Unmarshal(body, &got), "%s", body)
		want := *d
		for _, s := range []*string{&want.WaitTimeFormatted, &want.LastUpdated, &want.QueueingMethod,
			&want.TimeUntilEventStartFormatted, &want.TimeUntilEventEndFormatted} {
			*s = jsonString(*s)
		}
		require.Equal(t, want, got[jsonString(rm.cfg.Page.JSONKey)])
	})
}

// jsonString is s as encoding/json writes it: each byte of invalid UTF-8
// becomes U+FFFD.
func jsonString(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[:size])
		}
		s = s[size:]
	}
	return b.String()
}

// failingBody fails the test if the room reads it: a queued request's body
// is neither read nor forwarded.
type failingBody struct{ t *testing.T }

func (b failingBody) Read([]byte) (int, error) {
	b.t.Error("the room read the request body")
	return 0, io.ErrUnexpectedEOF
}

func (b failingBody) Close() error { return nil }
