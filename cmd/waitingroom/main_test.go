package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/forwardauth"
)

const hexKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

func TestUsageErrors(t *testing.T) {
	t.Setenv("WAITINGROOM_KEY", "")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing to serve", nil, "exactly one of -upstream URL, -demo and -forward-auth"},
		{"both", []string{"-demo", "-upstream", "http://x"}, "exactly one of -upstream and -demo, not both"},
		{"all three", []string{"-demo", "-upstream", "http://x", "-forward-auth"}, "not all three"},
		{"host without upstream", []string{"-forward-auth", "-front-door", "nginx", "-host", "upstream", "-key", hexKey}, "applies to an upstream only"},
		{"forward-auth without a front door", []string{"-forward-auth", "-key", hexKey}, "-forward-auth needs -front-door (frontDoor in a config file), the server in front: nginx, caddy, traefik, envoy, ingress-nginx, generic"},
		{"unknown front door", []string{"-forward-auth", "-front-door", "apache", "-key", hexKey}, `-front-door "apache": want one of nginx, caddy`},
		{"front door in the wrong case", []string{"-forward-auth", "-front-door", "NGINX", "-key", hexKey}, `-front-door "NGINX": want one of`},
		{"front door without forward-auth", []string{"-demo", "-front-door", "nginx", "-key", hexKey}, "-front-door applies to -forward-auth only"},
		{"bad trusted proxies", []string{"-forward-auth", "-trusted-proxies", "127.0.0.1/32,nope", "-key", hexKey}, `got "nope"`},
		{"unknown flag", []string{"-demo", "-bogus"}, "bogus"},
		{"extra argument", []string{"-demo", "extra"}, "unexpected arguments"},
		{"bad number", []string{"-demo", "-total-active-users", "many"}, "invalid value"},
		{"no key", []string{"-upstream", "http://127.0.0.1:1"}, "cookie key is required"},
		{"bad key", []string{"-demo", "-key", "!!"}, "neither hex nor base64"},
		{"short key", []string{"-demo", "-key", "abcd"}, "at least 32"},
		{"bad upstream", []string{"-upstream", "ftp://x", "-key", hexKey}, "not an http(s) URL"},
		{"bad method", []string{"-demo", "-key", hexKey, "-queueing-method", "lifo"}, "QueueingMethod"},
		{"bad limits", []string{"-demo", "-key", hexKey, "-total-active-users", "1", "-new-users-per-minute", "2"}, "must not exceed"},
		{"bad status", []string{"-demo", "-key", hexKey, "-queueing-status-code", "500"}, "QueueingStatusCode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), tc.args, io.Discard, &stderr, nil)
			assert.Equal(t, 2, code)
			assert.Contains(t, stderr.String(), tc.want)
		})
	}
}

// The pass secret comes from the environment, for -forward-auth only,
// and -pass-duration needs it; a bad one is a usage error that does not
// show it; a good one reaches the forward-auth handler's Options.
func TestPassSettings(t *testing.T) {
	const secret = "cmd-pass-secret-0123456789"
	for _, tc := range []struct {
		name   string
		secret string
		args   []string
		want   string // the usage error, "" for none
	}{
		{"not for a proxy", secret, []string{"-demo", "-key", hexKey}, "WAITINGROOM_PASS_SECRET is for -forward-auth"},
		{"duration without a secret", "", []string{"-forward-auth", "-front-door", "nginx", "-key", hexKey, "-pass-duration", "3s"}, "-pass-duration needs WAITINGROOM_PASS_SECRET"},
		{"short secret", "short-secret", []string{"-forward-auth", "-front-door", "nginx", "-key", hexKey}, "22 to 128 characters"},
		{"too long", secret, []string{"-forward-auth", "-front-door", "nginx", "-key", hexKey, "-pass-duration", "10s"}, "between 1s and 5s"},
		{"default", secret, []string{"-forward-auth", "-front-door", "nginx", "-key", hexKey}, ""},
		{"3 s", secret, []string{"-forward-auth", "-front-door", "nginx", "-key", hexKey, "-pass-duration", "3s"}, ""},
		{"none", "", []string{"-forward-auth", "-front-door", "nginx", "-key", hexKey}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noEnv(t)
			t.Setenv("WAITINGROOM_PASS_SECRET", tc.secret)
			o, err := parse(tc.args, &bytes.Buffer{})
			if tc.want != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.want)
				if tc.secret != "" {
					assert.NotContains(t, err.Error(), tc.secret)
				}
				return
			}
			require.NoError(t, err)
			p := o.forwardAuthOptions().Pass
			assert.Equal(t, tc.secret, p.Secret)
			if tc.secret != "" {
				assert.Equal(t, o.passDuration, p.Duration)
				assert.NoError(t, p.Validate())
			}
		})
	}

	// A pass whose revoke's hold the room's SyncInterval makes too long
	// is a usage error, before anything is served.
	noEnv(t)
	t.Setenv("WAITINGROOM_PASS_SECRET", secret)
	var stderr bytes.Buffer
	code := run(t.Context(), []string{"-forward-auth", "-front-door", "nginx", "-key", hexKey, "-listen", "127.0.0.1:0", "-sync-interval", "4s"}, io.Discard, &stderr, nil)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "a revoke would hold the visitor's slot")
	assert.NotContains(t, stderr.String(), secret)
}

// TestHelp: -h, -help and --help print the usage, every flag with its
// default, to stdout and exit with 0, whatever else is on the command
// line; a bad flag exits with 2, says so on stderr and prints nothing on
// stdout.
func TestHelp(t *testing.T) {
	noEnv(t)
	var flags []string
	newFlagSet(&options{}).VisitAll(func(f *flag.Flag) { flags = append(flags, f.Name) })
	require.Len(t, flags, 35)

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"-h", []string{"-h"}, 0, ""},
		{"-help", []string{"-help"}, 0, ""},
		{"--help", []string{"--help"}, 0, ""},
		{"after other flags", []string{"-demo", "-name", "x", "-h"}, 0, ""},
		{"with a config file that does not exist", []string{"-config", "/nonexistent.yaml", "-h"}, 0, ""},
		{"unknown flag", []string{"-bogus"}, 2, "waitingroom: flag provided but not defined: -bogus\nRun waitingroom -h for the flags.\n"},
		{"bad value", []string{"-demo", "-total-active-users", "many"}, 2, "waitingroom: invalid value \"many\" for flag -total-active-users: parse error\nRun waitingroom -h for the flags.\n"},
		{"not a flag problem", []string{"-demo", "-upstream", "http://x"}, 2, "exactly one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, tc.code, run(t.Context(), tc.args, &stdout, &stderr, nil))
			if tc.code != 0 {
				assert.Empty(t, stdout.String())
				assert.Contains(t, stderr.String(), tc.stderr)
				if tc.name == "not a flag problem" {
					assert.NotContains(t, stderr.String(), "-h for the flags")
				}
				return
			}
			assert.Empty(t, stderr.String())
			out := stdout.String()
			assert.True(t, strings.HasPrefix(out, "Usage:\n  waitingroom -upstream URL"), out)
			for _, name := range flags {
				listed := regexp.MustCompile(`(?m)^  -` + name + `( |$)`).MatchString(out)
				assert.True(t, listed, "the usage lists -%s", name)
			}
			assert.Contains(t, out, `(default "127.0.0.1:8080")`)
		})
	}
}

// start runs the command with args and returns its base URL; it stops when
// the test ends.
func start(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, append([]string{"-listen", "127.0.0.1:0"}, args...), io.Discard, &stderr, ready)
	}()
	select {
	case addr := <-ready:
		t.Cleanup(func() {
			cancel()
			assert.Equal(t, 0, <-done, "clean shutdown")
		})
		return "http://" + addr
	case code := <-done:
		t.Fatalf("exited with %d: %s", code, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("did not start")
	}
	return ""
}

func browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, Timeout: 10 * time.Second}
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func TestDemoQueuesTheFourthBrowser(t *testing.T) {
	base := start(t, "-demo", "-total-active-users", "3", "-new-users-per-minute", "3")
	for i := range 3 {
		c := browser(t)
		resp, body := get(t, c, base+"/")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Contains(t, body, "You're in", "browser %d", i)
		_, body = get(t, c, base+"/")
		require.Contains(t, body, "You're in", "the cookie keeps browser %d in", i)
	}
	resp, body := get(t, browser(t), base+"/")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.NotEmpty(t, resp.Header.Get("Refresh"))
	assert.Contains(t, strings.ToLower(body), "waiting")
	_, active := get(t, browser(t), base+"/active")
	assert.Equal(t, "3\n", active, "/active is outside the room and counts the three sessions")
}

func TestProxiesUpstream(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "upstream "+r.URL.Path)
	}))
	defer up.Close()
	t.Setenv("WAITINGROOM_KEY", hexKey)
	base := start(t, "-upstream", up.URL, "-total-active-users", "1", "-new-users-per-minute", "1")
	_, body := get(t, browser(t), base+"/shop")
	assert.Equal(t, "upstream /shop", body)
	resp, body := get(t, browser(t), base+"/shop")
	assert.NotEmpty(t, resp.Header.Get("Refresh"))
	assert.NotContains(t, body, "upstream")
}

func TestAdminAddress(t *testing.T) {
	t.Setenv("WAITINGROOM_ADMIN_TOKEN", "")
	var stderr bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), []string{"-demo", "-key", hexKey, "-admin-listen", "127.0.0.1:0"}, io.Discard, &stderr, nil))
	assert.Contains(t, stderr.String(), "never runs without authentication")

	const token = "0123456789abcdef-admin"
	started := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 2)
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-demo", "-key", hexKey, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0", "-admin-token", token}, io.Discard, &bytes.Buffer{}, ready)
	}()
	base, admin := "http://"+<-ready, "http://"+<-ready
	defer func() { cancel(); assert.Equal(t, 0, <-done) }()

	_, body := get(t, browser(t), base+"/")
	require.Contains(t, body, "You're in")

	do := func(path, tok string) (*http.Response, string) {
		req, err := http.NewRequest(http.MethodGet, admin+path, nil)
		require.NoError(t, err)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, path := range []string{"/status", "/metrics", "/"} {
		resp, _ := do(path, "")
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, path)
		resp, _ = do(path, "wrong-token-wrong-token")
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, path)
	}
	resp, status := do("/status", token)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, status, `"room":"default"`)
	resp, exposition := do("/metrics", token)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, exposition, "# TYPE waitingroom_admitted_total counter\nwaitingroom_admitted_total{room=\"default\"} 1\n")
	assert.Contains(t, exposition, `waitingroom_instances{room="default"} 1`)
	assert.Contains(t, exposition, "\ngo_goroutines ")
	assert.Contains(t, exposition, "\nprocess_open_fds ")

	// The series the README's alert uses (time() -
	// waitingroom_last_sync_timestamp_seconds > 30): the latest sync, in
	// Unix seconds, between the start and now, to the millisecond.
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(exposition))
	require.NoError(t, err)
	sample := func(name string) (float64, bool) {
		mf := mfs[name]
		if mf == nil {
			return 0, false
		}
		require.Len(t, mf.GetMetric(), 1, name)
		return mf.GetMetric()[0].GetGauge().GetValue(), true
	}
	synced, ok := sample("waitingroom_last_sync_timestamp_seconds")
	require.True(t, ok, "waitingroom_last_sync_timestamp_seconds")
	syncedMs := int64(math.Round(synced * 1000)) // the room keeps the time of a sync in milliseconds
	assert.GreaterOrEqual(t, syncedMs, started.UnixMilli())
	assert.LessOrEqual(t, syncedMs, time.Now().UnixMilli())
	// The estimate as the metrics module gives it: absent while unknown
	// (nothing waits here, nothing flowed before the first admission),
	// never a made-up value.
	known, ok := sample("waitingroom_estimate_known")
	require.True(t, ok)
	wait, present := sample("waitingroom_estimated_wait_seconds")
	assert.Equal(t, known == 1, present, "estimated_wait_seconds is there exactly when the estimate is known")
	assert.GreaterOrEqual(t, wait, 0.0)
}

// TestLimitFlags: a limit given alone, on the command line or in the
// config file, keeps the other at its default (200) where that fits and
// moves it just as far as new-users-per-minute ≤ total-active-users needs
// otherwise; any pair up to 2³¹ − 1 that the room accepts is
// accepted; two limits given that do not fit together, and limits beyond
// 2³¹ − 1, are refused with the setting named.
func TestLimitFlags(t *testing.T) {
	noEnv(t)
	const limit = 1<<31 - 1 // the largest limit a room takes
	maxLimit := strconv.Itoa(limit)
	over := strconv.Itoa(limit + 1)
	for _, tc := range []struct {
		name             string
		args             []string
		file             string // a YAML config file, if any
		total, perMinute int
		err              string // the error; $FILE stands for the file's path
	}{
		{"neither", nil, "", 200, 200, ""},
		{"both", []string{"-total-active-users", "500", "-new-users-per-minute", "100"}, "", 500, 100, ""},
		{"total alone, below the default rate", []string{"-total-active-users", "100"}, "", 100, 100, ""},
		{"total alone, above the default rate", []string{"-total-active-users", "1000"}, "", 1000, 200, ""},
		{"total of one", []string{"-total-active-users", "1"}, "", 1, 1, ""},
		{"rate alone, below the default total", []string{"-new-users-per-minute", "50"}, "", 200, 50, ""},
		{"rate alone, above the default total", []string{"-new-users-per-minute", "500"}, "", 500, 500, ""},
		{"large pair", []string{"-total-active-users", "2000000000", "-new-users-per-minute", "2000000000"}, "", 2000000000, 2000000000, ""},
		{"both at MaxLimit", []string{"-total-active-users", maxLimit, "-new-users-per-minute", maxLimit}, "", limit, limit, ""},
		{"large rate alone", []string{"-new-users-per-minute", "2000000000"}, "", 2000000000, 2000000000, ""},
		{"total alone in the file", nil, "totalActiveUsers: 100\n", 100, 100, ""},
		{"rate alone in the file", nil, "newUsersPerMinute: 1000\n", 1000, 1000, ""},
		{"total in the file, rate by flag", []string{"-new-users-per-minute", "50"}, "totalActiveUsers: 100\n", 100, 50, ""},
		{"rate in the file, total by flag", []string{"-total-active-users", "1000"}, "newUsersPerMinute: 500\n", 1000, 500, ""},
		{"large pair in the file", nil, "totalActiveUsers: " + maxLimit + "\nnewUsersPerMinute: " + maxLimit + "\n", limit, limit, ""},

		{"rate above total", []string{"-total-active-users", "1", "-new-users-per-minute", "2"}, "", 0, 0, "-new-users-per-minute (2) must not exceed -total-active-users (1)"},
		{"rate above total, both in the file", nil, "totalActiveUsers: 10\nnewUsersPerMinute: 20\n", 0, 0, "$FILE:2:20: newUsersPerMinute (20) must not exceed $FILE:1:19: totalActiveUsers (10)"},
		{"rate by flag above the file's total", []string{"-new-users-per-minute", "20"}, "totalActiveUsers: 10\n", 0, 0, "-new-users-per-minute (20) must not exceed $FILE:1:19: totalActiveUsers (10)"},
		{"total zero", []string{"-total-active-users", "0"}, "", 0, 0, "-total-active-users: TotalActiveUsers must be > 0, got 0"},
		{"rate negative", []string{"-new-users-per-minute", "-1"}, "", 0, 0, "-new-users-per-minute: NewUsersPerMinute must be > 0, got -1"},
		{"total above MaxLimit", []string{"-total-active-users", over}, "", 0, 0, "-total-active-users: TotalActiveUsers must be at most 2147483647"},
		{"rate above MaxLimit", []string{"-new-users-per-minute", over}, "", 0, 0, "-new-users-per-minute: NewUsersPerMinute must be at most 2147483647"},
		{"total near MaxInt64", []string{"-total-active-users", "9223372036854775807", "-new-users-per-minute", "1"}, "", 0, 0, "-total-active-users: TotalActiveUsers must be at most 2147483647"},
		{"file total above MaxLimit", nil, "totalActiveUsers: " + over + "\n", 0, 0, "$FILE:1:19: totalActiveUsers: " + over + " is out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, file := demoArgs(t, tc.args, tc.file)
			o, err := parse(args, io.Discard)
			if tc.err != "" {
				require.ErrorIs(t, err, errUsage)
				assert.ErrorContains(t, err, strings.ReplaceAll(tc.err, "$FILE", file))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.total, o.total, "total-active-users")
			assert.Equal(t, tc.perMinute, o.perMinute, "new-users-per-minute")
			room, err := waitingroom.New(withoutSync(o.roomConfig([][]byte{make([]byte, 32)}, nil)), nopStore{})
			require.NoError(t, err, "the room takes the limits")
			require.NoError(t, room.Close())
		})
	}
}

// demoArgs returns the flags args after -demo and, when file is not
// empty, -config with a file holding it, whose path it returns too.
func demoArgs(t *testing.T, args []string, file string) ([]string, string) {
	t.Helper()
	args = append([]string{"-demo"}, args...)
	var path string
	if file != "" {
		path = writeFile(t, "room.yaml", file)
		args = append(args, "-config", path)
	}
	return args, path
}

// TestFrontDoor: -front-door (or frontDoor in the file) picks the headers
// the room reads the original request from, and only those: behind each
// server, a visitor who adds every forwarding header with a bypass path
// waits in a full room, while the server's own request for a bypass path
// passes.
func TestFrontDoor(t *testing.T) {
	noEnv(t)
	forged := map[string]string{
		"X-Forwarded-Method": "GET", "X-Forwarded-Uri": "/static/x.css", "X-Forwarded-Host": "shop.example", "X-Forwarded-Proto": "https",
		"X-Original-Method": "GET", "X-Original-Uri": "/static/x.css", "X-Original-Url": "https://shop.example/static/x.css",
		"Forwarded": "for=10.0.0.1", "X-Real-Ip": "10.0.0.1",
	}
	// auth is the auth request server sends for path, with the visitor's
	// headers (client) under its own.
	auth := func(base, server, path string, client map[string]string) *http.Request {
		target, own := base+"/", map[string]string{}
		switch frontDoors[server] {
		case forwardauth.Forwarded:
			own = map[string]string{"X-Forwarded-Method": "GET", "X-Forwarded-Uri": path, "X-Forwarded-Host": "shop.example", "X-Forwarded-Proto": "https"}
		case forwardauth.IngressNginx:
			own = map[string]string{"X-Original-Method": "GET", "X-Original-Url": "https://shop.example" + path}
		case forwardauth.Envoy:
			target = base + path
		}
		req, err := http.NewRequest(http.MethodGet, target, nil)
		require.NoError(t, err)
		for k, v := range client {
			req.Header.Set(k, v)
		}
		for k, v := range own {
			req.Header.Set(k, v)
		}
		return req
	}
	do := func(req *http.Request) int {
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, server := range frontDoorNames {
		t.Run(server, func(t *testing.T) {
			file := writeFile(t, "room.yaml", "forwardAuth: true\nfrontDoor: "+server+"\nbypass:\n  - pathPrefix: [/static/]\n")
			base := start(t, "-config", file, "-key", hexKey, "-trusted-proxies", "127.0.0.1/32",
				"-total-active-users", "1", "-new-users-per-minute", "1", "-health-path", "")
			require.Equal(t, http.StatusOK, do(auth(base, server, "/product", nil)), "the first visitor takes the one slot")
			for range 5 {
				assert.Equal(t, http.StatusTooManyRequests, do(auth(base, server, "/checkout", forged)), "forged headers gain nothing")
			}
			assert.Equal(t, http.StatusOK, do(auth(base, server, "/static/app.css", nil)), "the server's own bypass path passes")
		})
	}
}

// The built-in page speaks the visitor's language by default (with Vary:
// Accept-Language), the room's language (en unless the file says) being
// the fallback; -negotiate-language=false, or negotiateLanguage: false in
// the config file, shows the room's language to everyone, and a flag on
// the command line overrides the file.
func TestNegotiateLanguage(t *testing.T) {
	noEnv(t)
	dir := t.TempDir()
	off := filepath.Join(dir, "off.yaml")
	require.NoError(t, os.WriteFile(off, []byte("negotiateLanguage: false\n"), 0o600))
	fr := filepath.Join(dir, "fr.json")
	require.NoError(t, os.WriteFile(fr, []byte(`{"language": "fr"}`), 0o600))
	for _, tc := range []struct {
		name      string
		args      []string
		german    string // the page's language for a German visitor
		other     string // and for one whose language the page lacks
		negotiate bool
	}{
		{"by default", nil, "de", "en", true},
		{"turned off", []string{"-negotiate-language=false"}, "en", "en", false},
		{"turned off in the file", []string{"-config", off}, "en", "en", false},
		{"the flag overrides the file", []string{"-config", off, "-negotiate-language"}, "de", "en", true},
		{"the file's language as the fallback", []string{"-config", fr}, "de", "fr", true},
		{"the file's language for everyone", []string{"-config", fr, "-negotiate-language=false"}, "fr", "fr", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := start(t, append([]string{"-demo", "-key", hexKey, "-total-active-users", "1", "-new-users-per-minute", "1"}, tc.args...)...)
			_, body := get(t, browser(t), base+"/")
			require.Contains(t, body, "You're in", "the first visitor takes the only slot")
			for _, v := range []struct{ accept, lang string }{
				{"de-CH, de;q=0.9, en;q=0.5", tc.german},
				{"xx", tc.other},
			} {
				req, err := http.NewRequest(http.MethodGet, base+"/", nil)
				require.NoError(t, err)
				req.Header.Set("Accept-Language", v.accept)
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.NoError(t, err)
				assert.Contains(t, string(b), `<html lang="`+v.lang+`"`, "Accept-Language: %s", v.accept)
				assert.Equal(t, tc.negotiate, slices.Contains(resp.Header.Values("Vary"), "Accept-Language"), "Vary: %q", resp.Header.Values("Vary"))
			}
		})
	}
}

// TestExitStatus: the exit statuses of the manual's table (README.md,
// "Exit status and signals"), one case per kind of cause: 0 after -h,
// -version or a clean stop; 2 for every error in what was given (a flag,
// a URL, a key, a token, a secret, the config file), found before
// anything is served; 1 when the store cannot be reached or an address
// cannot be listened on. Each message starts with "waitingroom:" and
// names the setting at fault.
func TestExitStatus(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := closed.Addr().String()
	require.NoError(t, closed.Close()) // nothing listens there now
	dir := t.TempDir()
	bad := filepath.Join(dir, "room.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"demo": true, "totalActiveUser": 3}`), 0o600))

	const token = "0123456789abcdef-admin"
	demo := []string{"-demo", "-key", hexKey, "-listen", "127.0.0.1:0"}
	for _, tc := range []struct {
		name     string
		args     []string
		env      map[string]string
		canceled bool // the context is done from the start: a clean stop
		code     int
		stderr   string // what stderr says ("" for nothing)
		notWant  string // what it must not say
	}{
		{name: "-h", args: []string{"-h"}, code: exitOK},
		{name: "-version", args: []string{"-version"}, code: exitOK},
		{name: "a stop during the start-up", args: demo, canceled: true, code: exitOK, stderr: "stopped before serving"},

		{name: "unknown flag", args: []string{"-bogus"}, code: exitUsage, stderr: "waitingroom: flag provided but not defined: -bogus"},
		{name: "bad value", args: []string{"-demo", "-idle-timeout", "soon"}, code: exitUsage, stderr: `waitingroom: invalid value "soon" for flag -idle-timeout`},
		{name: "nothing to serve", code: exitUsage, stderr: "waitingroom: give exactly one of"},
		{name: "bad upstream", args: []string{"-upstream", "ftp://x", "-key", hexKey}, code: exitUsage, stderr: "waitingroom: -upstream \"ftp://x\" is not an http(s) URL"},
		{name: "no key", args: []string{"-upstream", "http://127.0.0.1:1"}, code: exitUsage, stderr: "waitingroom: a cookie key is required"},
		{name: "short key", args: []string{"-demo", "-key", "abcd"}, code: exitUsage, stderr: "waitingroom: key: 2 bytes"},
		{name: "bad store URL", args: append([]string{"-store", "redis://"}, demo...), code: exitUsage, stderr: "waitingroom: -store redis:: no host"},
		{name: "missing config file", args: []string{"-config", filepath.Join(dir, "none.yaml")}, code: exitUsage, stderr: "waitingroom: -config: open "},
		{name: "config file typo", args: []string{"-config", bad}, code: exitUsage, stderr: "room.json:1:16: totalActiveUser: unknown field; did you mean totalActiveUsers?"},
		{name: "bad room setting", args: append([]string{"-queueing-status-code", "500"}, demo...), code: exitUsage, stderr: "waitingroom: -queueing-status-code: QueueingStatusCode must be"},
		{name: "admin address without a token", args: append([]string{"-admin-listen", "127.0.0.1:0"}, demo...), code: exitUsage, stderr: "waitingroom: -admin-listen needs -admin-token or WAITINGROOM_ADMIN_TOKEN"},
		{name: "short admin token", args: append([]string{"-admin-listen", "127.0.0.1:0", "-admin-token", "short-tok"}, demo...), code: exitUsage, notWant: "short-tok",
			stderr: "waitingroom: -admin-token (for -admin-listen): the bearer token is 9 bytes; it must be at least 16\n"},
		{name: "short admin token from the environment", args: append([]string{"-admin-listen", "127.0.0.1:0"}, demo...), env: map[string]string{"WAITINGROOM_ADMIN_TOKEN": "short-tok"}, code: exitUsage, notWant: "short-tok",
			stderr: "waitingroom: WAITINGROOM_ADMIN_TOKEN (for -admin-listen): the bearer token is 9 bytes; it must be at least 16\n"},
		{name: "admin token with a space", args: append([]string{"-admin-listen", "127.0.0.1:0", "-admin-token", "0123456789 abcdef"}, demo...), code: exitUsage, notWant: "0123456789",
			stderr: "waitingroom: -admin-token (for -admin-listen): the bearer token must be printable ASCII without spaces\n"},
		{name: "short pass secret", args: []string{"-forward-auth", "-front-door", "nginx", "-key", hexKey}, env: map[string]string{"WAITINGROOM_PASS_SECRET": "short"}, code: exitUsage, notWant: "short", stderr: "waitingroom: -pass-duration or WAITINGROOM_PASS_SECRET: Pass.Secret must be 22 to 128 characters"},
		{name: "pass longer than the sync allows", args: []string{"-forward-auth", "-front-door", "nginx", "-key", hexKey, "-listen", "127.0.0.1:0", "-sync-interval", "4s"}, env: map[string]string{"WAITINGROOM_PASS_SECRET": "cmd-pass-secret-0123456789"}, code: exitUsage, stderr: "waitingroom: -pass-duration and -sync-interval: Pass.Duration 2s and SyncInterval 4s: a revoke would hold the visitor's slot"},
		{name: "template that does not exist", args: append([]string{"-template", filepath.Join(dir, "none.mustache")}, demo...), code: exitUsage, stderr: "waitingroom: -template: open "},

		{name: "not an address", args: []string{"-demo", "-key", hexKey, "-listen", "8080"}, code: exitUsage, stderr: `waitingroom: -listen "8080": want host:port`},
		{name: "not a port", args: append([]string{"-admin-listen", "127.0.0.1:99999", "-admin-token", token}, demo...), code: exitUsage, stderr: `waitingroom: -admin-listen "127.0.0.1:99999": want host:port`},
		{name: "store cannot be reached", args: append([]string{"-store", "redis://" + closedAddr + "/0"}, demo...), code: exitFailure, stderr: "waitingroom: store redis://" + closedAddr + "/0: first sync failed"},
		{name: "address in use", args: []string{"-demo", "-key", hexKey, "-listen", busy.Addr().String()}, code: exitFailure, stderr: "waitingroom: listen tcp " + busy.Addr().String()},
		{name: "admin address in use", args: append([]string{"-admin-listen", busy.Addr().String(), "-admin-token", token}, demo...), code: exitFailure, stderr: "waitingroom: admin: listen tcp " + busy.Addr().String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tc.canceled {
				cancel()
			}
			var stdout, stderr bytes.Buffer
			code := run(ctx, tc.args, &stdout, &stderr, nil)
			assert.Equal(t, tc.code, code, "stderr: %s", stderr.String())
			switch {
			case tc.stderr != "":
				assert.Contains(t, stderr.String(), tc.stderr)
			case tc.code == exitOK:
				assert.Empty(t, stderr.String())
				assert.NotEmpty(t, stdout.String())
			}
			if tc.notWant != "" {
				assert.NotContains(t, stderr.String(), tc.notWant)
			}
			if tc.code != exitOK {
				assert.Empty(t, stdout.String())
				assert.NotContains(t, stderr.String(), "invalid config", "the reason, without the library's prefix")
			}
		})
	}
}

// -version prints the version line, whatever else the command line
// holds, and reads no config file.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{
		{"-version"},
		{"--version"},
		{"-demo", "-version"},
		{"-version", "-config", "/nonexistent.yaml"},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, exitOK, run(t.Context(), args, &stdout, &stderr, nil), "%q", args)
		assert.Empty(t, stderr.String(), "%q", args)
		bi, ok := debug.ReadBuildInfo()
		assert.Equal(t, versionLine(bi, ok)+"\n", stdout.String(), "%q", args)
		assert.True(t, strings.HasPrefix(stdout.String(), "waitingroom "), "%q", stdout.String())
	}
}

func TestVersionLine(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	const rev = "79c1e24f0a3c5e2b9d8f7a6b5c4d3e2f1a0b9c8d"
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"go install @version", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.4.0"}}, true,
			"waitingroom v1.4.0 go1.26.0"},
		{"a build of a checkout", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("-compiler", "gc", "vcs", "git", "vcs.revision", rev, "vcs.time", "2026-12-04T07:58:16Z", "vcs.modified", "false")}, true,
			"waitingroom (devel) commit " + rev + " 2026-12-04T07:58:16Z go1.26.0"},
		{"a checkout with changes", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.4.1-0.20261204075816-79c1e24f0a3c+dirty"},
			Settings: vcs("vcs.revision", rev, "vcs.time", "2026-12-04T07:58:16Z", "vcs.modified", "true")}, true,
			"waitingroom v1.4.1-0.20261204075816-79c1e24f0a3c+dirty commit " + rev + " 2026-12-04T07:58:16Z modified go1.26.0"},
		{"no version", &debug.BuildInfo{GoVersion: "go1.26.0"}, true, "waitingroom (devel) go1.26.0"},
		{"no build information", nil, false, "waitingroom (unknown version: built without module information)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, versionLine(tc.bi, tc.ok))
		})
	}
}

// The built command exits with run's status (os.Exit in main): -version
// with 0 and its line on stdout, a usage error with 2, a failure with 1.
func TestBinaryExitStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	bin := filepath.Join(t.TempDir(), "waitingroom")
	out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"-version", []string{"-version"}, exitOK, "waitingroom ", ""},
		{"unknown flag", []string{"-bogus"}, exitUsage, "", "waitingroom: flag provided but not defined: -bogus"},
		{"short admin token", []string{"-demo", "-admin-listen", "127.0.0.1:0", "-admin-token", "changeme"}, exitUsage, "",
			"waitingroom: -admin-token (for -admin-listen): the bearer token is 8 bytes; it must be at least 16\n"},
		{"address in use", []string{"-demo", "-key", hexKey, "-listen", busy.Addr().String()}, exitFailure, "", "address already in use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin, tc.args...)
			cmd.Env = append(os.Environ(), "WAITINGROOM_KEY=", "WAITINGROOM_KEYS=", "WAITINGROOM_ADMIN_TOKEN=", "WAITINGROOM_STORE=", "WAITINGROOM_PASS_SECRET=")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.code, code, "stderr: %s", stderr.String())
			assert.True(t, strings.HasPrefix(stdout.String(), tc.stdout), "stdout: %q", stdout.String())
			assert.Contains(t, stderr.String(), tc.stderr)
		})
	}
}
