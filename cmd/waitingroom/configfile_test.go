package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
)

// writeFile writes a file named name with content in a new directory and
// returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// noEnv clears the environment variables the command reads.
func noEnv(t *testing.T) {
	for _, v := range []string{"WAITINGROOM_KEY", "WAITINGROOM_KEYS", "WAITINGROOM_ADMIN_TOKEN", "WAITINGROOM_STORE", "WAITINGROOM_PASS_SECRET"} {
		t.Setenv(v, "")
	}
}

func TestExampleConfig(t *testing.T) {
	noEnv(t)
	o, err := parse([]string{"-config", "testdata/example.yaml"}, &bytes.Buffer{})
	require.NoError(t, err)

	assert.Equal(t, "127.0.0.1:8080", o.listen)
	assert.Equal(t, "http://127.0.0.1:3000", o.upstreamURL.String())
	assert.False(t, o.demo)
	assert.Equal(t, hostOriginal, o.host)
	assert.True(t, o.https)
	assert.Equal(t, "shop", o.name)
	assert.Equal(t, 500, o.total)
	assert.Equal(t, 100, o.perMinute)
	assert.Equal(t, 10*time.Minute, o.session)
	assert.Equal(t, waitingroom.FIFO, o.queueingMethod())
	assert.Equal(t, 20*time.Second, o.refresh)
	assert.Equal(t, 5*time.Minute, o.queueHold)
	assert.Equal(t, 200, o.statusCode)
	assert.Equal(t, filepath.Join("testdata", "page.mustache"), o.templatePath)
	assert.Contains(t, o.template, "Almost there")
	assert.Equal(t, "en", o.language)
	assert.True(t, o.negotiateLanguage)
	assert.Equal(t, "shop.example.com", o.cookieDomain)
	assert.Equal(t, "/", o.cookiePath)
	assert.Equal(t, kindMemory, o.store.kind)
	assert.Equal(t, time.Second, o.syncInterval)
	assert.Equal(t, "/healthz", o.healthPath)
	assert.Empty(t, o.lotteryPath, "off unless asked")
	assert.Empty(t, o.adminListen)
	assert.Equal(t, connLimits{readHeader: 10 * time.Second, idle: 2 * time.Minute, body: time.Minute, maxHeaderBytes: 65536}, o.limits)
	assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}, o.trustedProxies)
	require.Len(t, o.bypass, 6)
	assert.Equal(t, `path prefix ["/static/" "/favicon.ico" "/robots.txt"]`, o.bypass[0].String())
	assert.Equal(t, `header "X-Monitor"`, o.bypass[4].String())

	require.Len(t, o.events, 1)
	e := o.events[0]
	assert.Equal(t, "winter sale", e.Name)
	assert.Equal(t, "2,000 coats at half price", e.Description)
	assert.False(t, e.Suspended)
	assert.Equal(t, time.Date(2027, 1, 15, 9, 30, 0, 0, time.UTC), e.PrequeueStart.UTC())
	assert.Equal(t, time.Date(2027, 1, 15, 10, 0, 0, 0, time.UTC), e.Start.UTC())
	assert.Equal(t, time.Date(2027, 1, 15, 12, 0, 0, 0, time.UTC), e.End.UTC())
	assert.True(t, e.ShuffleAtStart)
	assert.Equal(t, 1000, e.TotalActiveUsers)
	assert.Equal(t, 200, e.NewUsersPerMinute)
	assert.Equal(t, 15*time.Minute, e.SessionDuration)
	require.NotNil(t, e.DisableSessionRenewal)
	assert.True(t, *e.DisableSessionRenewal)
	assert.Equal(t, waitingroom.FIFO, e.QueueingMethod)
	assert.Contains(t, e.Template, "The winter sale")

	room, err := waitingroom.New(withoutSync(o.roomConfig([][]byte{make([]byte, 32)}, nil)), nopStore{})
	require.NoError(t, err, "the example makes a valid room")
	require.NoError(t, room.Close())
}

// TestExampleConfigServes runs the example file, with -upstream and
// -listen overriding it: its bypass rules let requests through with no
// cookie, and other requests get the room's cookie, Secure (https: true).
func TestExampleConfigServes(t *testing.T) {
	noEnv(t)
	t.Setenv("WAITINGROOM_KEYS", hexKey)
	up := upstream(t)
	base := start(t, "-config", "testdata/example.yaml", "-upstream", up)
	for _, tc := range []struct {
		name   string
		path   string
		header [2]string
		bypass bool
	}{
		{"static files", "/STATIC/app.css", [2]string{}, true},
		{"monitor with the secret", "/", [2]string{"X-Monitor", "e0c1f4d2b7a9"}, true},
		{"monitor with a wrong secret", "/", [2]string{"X-Monitor", "guess"}, false},
		{"staff cookie, any value", "/", [2]string{"Cookie", "staff_preview=1"}, true},
		{"a page", "/shop", [2]string{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, base+tc.path, nil)
			require.NoError(t, err)
			if tc.header[0] != "" {
				req.Header.Set(tc.header[0], tc.header[1])
			}
			resp, body := do(t, req)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Contains(t, body, "upstream")
			if tc.bypass {
				assert.Empty(t, resp.Header.Values("Set-Cookie"))
				return
			}
			require.Len(t, resp.Header.Values("Set-Cookie"), 1)
			c := resp.Cookies()[0]
			assert.Equal(t, "__waitingroom_shop", c.Name)
			assert.True(t, c.Secure)
			assert.Equal(t, http.SameSiteNoneMode, c.SameSite)
			assert.Equal(t, "shop.example.com", c.Domain)
		})
	}
}

func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "page.mustache"), []byte("<p>custom {{refreshIntervalSeconds}}</p>"), 0o600))
	for _, tc := range []struct {
		name, file, content string
		args                []string
		env                 map[string]string
		check               func(t *testing.T, o *options)
	}{
		{
			name: "JSON", file: "room.json",
			content: `{"demo": true, "name": "shop", "totalActiveUsers": 30, "newUsersPerMinute": 10, "sessionDuration": "2m",
				"queueingMethod": "Random", "https": true, "language": "de", "queueHold": "90s", "refreshInterval": "30s"}`,
			check: func(t *testing.T, o *options) {
				assert.True(t, o.demo)
				assert.Equal(t, "shop", o.name)
				assert.Equal(t, 30, o.total)
				assert.Equal(t, 10, o.perMinute)
				assert.Equal(t, 2*time.Minute, o.session)
				assert.Equal(t, waitingroom.Random, o.queueingMethod())
				assert.True(t, o.https)
				assert.Equal(t, "de", o.language)
				assert.Equal(t, 90*time.Second, o.queueHold)
			},
		},
		{
			name: "flags override the file", file: "room.yml",
			content: "demo: true\ntotalActiveUsers: 30\nnewUsersPerMinute: 10\nlisten: 127.0.0.1:9999\nhttps: true\n",
			args:    []string{"-total-active-users", "20", "-https=false"},
			check: func(t *testing.T, o *options) {
				assert.Equal(t, 20, o.total, "the flag")
				assert.Equal(t, 10, o.perMinute, "the file")
				assert.Equal(t, "127.0.0.1:9999", o.listen, "the file")
				assert.False(t, o.https, "the flag")
			},
		},
		{
			name: "a flag given with its default value still overrides", file: "room.yaml",
			content: "demo: true\nname: fromfile\n",
			args:    []string{"-name", "default"},
			check:   func(t *testing.T, o *options) { assert.Equal(t, "default", o.name) },
		},
		{
			name: "the file's store comes before WAITINGROOM_STORE", file: "room.yaml",
			content: "demo: true\nstore: sqlite:///tmp/rooms.db\n",
			env:     map[string]string{"WAITINGROOM_STORE": "redis://127.0.0.1:6379/0"},
			check: func(t *testing.T, o *options) {
				assert.Equal(t, kindSQLite, o.store.kind)
				assert.True(t, o.storeOpts.createSchema, "SQLite creates its table by default")
			},
		},
		{
			name: "WAITINGROOM_STORE when the file has none", file: "room.yaml",
			content: "demo: true\n",
			env:     map[string]string{"WAITINGROOM_STORE": "redis://127.0.0.1:6379/0"},
			check:   func(t *testing.T, o *options) { assert.Equal(t, kindRedis, o.store.kind) },
		},
		{
			name: "store settings", file: "room.yaml",
			content: "demo: true\nstore: sqlite:///tmp/rooms.db\nstoreTable: rooms\ncreateSchema: false\n",
			check: func(t *testing.T, o *options) {
				assert.Equal(t, "rooms", o.storeOpts.table)
				assert.False(t, o.storeOpts.createSchema)
			},
		},
		{
			name: "null and empty values are not set", file: "room.yaml",
			content: "demo: true\nname:\ntemplate: null\nbypass:\n",
			check: func(t *testing.T, o *options) {
				assert.Equal(t, "default", o.name)
				assert.Empty(t, o.templatePath)
				assert.Empty(t, o.bypass)
			},
		},
		{
			name: "the template is relative to the file", file: "room.yaml",
			content: "demo: true\ntemplate: page.mustache\n",
			check:   func(t *testing.T, o *options) { assert.Contains(t, o.template, "custom") },
		},
		{
			name: "-template is relative to the working directory", file: "room.yaml",
			content: "demo: true\ntemplate: page.mustache\n",
			args:    []string{"-template", "testdata/sale.mustache"},
			check:   func(t *testing.T, o *options) { assert.Contains(t, o.template, "winter sale") },
		},
		{
			name: "YAML anchors and aliases", file: "room.yaml",
			content: "demo: true\ntotalActiveUsers: &n 40\nnewUsersPerMinute: *n\nbypass:\n  - networks: &nets [10.0.0.0/8]\ntrustedProxies: *nets\n",
			check: func(t *testing.T, o *options) {
				assert.Equal(t, 40, o.perMinute)
				assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, o.trustedProxies)
			},
		},
		{
			name: "a single string for a list", file: "room.yaml",
			content: "demo: true\nbypass:\n  - pathPrefix: /static/\ntrustedProxies: 192.0.2.0/24\n",
			check: func(t *testing.T, o *options) {
				require.Len(t, o.bypass, 1)
				assert.Len(t, o.trustedProxies, 1)
			},
		},
		{
			name: "an upstream, -host upstream", file: "room.json",
			content: `{"upstream": "https://app.internal:8443/base", "host": "upstream"}`,
			check: func(t *testing.T, o *options) {
				assert.Equal(t, "app.internal:8443", o.upstreamURL.Host)
				assert.Equal(t, hostUpstream, o.host)
			},
		},
		{
			name: "events in JSON", file: "room.json",
			content: `{"demo": true, "events": [
				{"name": "b", "start": "2027-01-02T10:00:00+01:00", "end": "2027-01-02T11:00:00+01:00", "queueingMethod": "reject"},
				{"name": "a", "start": "2027-01-01T10:00:00Z", "end": "2027-01-01T11:00:00Z", "disableSessionRenewal": false}]}`,
			check: func(t *testing.T, o *options) {
				require.Len(t, o.events, 2)
				assert.Equal(t, "b", o.events[0].Name, "the file's order (the room sorts them)")
				assert.Equal(t, waitingroom.Reject, o.events[0].QueueingMethod)
				assert.Nil(t, o.events[0].DisableSessionRenewal)
				require.NotNil(t, o.events[1].DisableSessionRenewal)
				assert.False(t, *o.events[1].DisableSessionRenewal)
			},
		},
		{
			name: "an empty mapping", file: "room.json", content: `{}`, args: []string{"-demo"},
			check: func(t *testing.T, o *options) { assert.Equal(t, 200, o.total) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			path := filepath.Join(dir, tc.file)
			require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o600))
			o, err := parse(append([]string{"-config", path}, tc.args...), &bytes.Buffer{})
			require.NoError(t, err)
			tc.check(t, o)
		})
	}
}

func TestConfigFileErrors(t *testing.T) {
	const tmpl = "page.mustache"
	for _, tc := range []struct {
		name, file, content string
		args                []string
		want                string // after "waitingroom: <dir>/"
		notWant             string
	}{
		// The file as a whole.
		{name: "unknown format", file: "room.toml", content: "demo = true", want: "room.toml: unknown format: name the file .json, .yaml or .yml"},
		{name: "empty", file: "room.yaml", content: "# nothing\n", want: "room.yaml: the file is empty"},
		{name: "empty JSON", file: "room.json", content: " \n", want: "room.json: the file is empty"},
		{name: "YAML syntax", file: "room.yaml", content: "demo: true\nname: [shop\n", want: "room.yaml:2: did not find expected ',' or ']'"},
		{name: "YAML tabs", file: "room.yaml", content: "demo: true\n\tname: shop\n", want: "room.yaml:2: found a tab character that violates indentation"},
		{name: "JSON syntax", file: "room.json", content: "{\n  \"demo\": true\n  \"name\": \"shop\"\n}", want: "room.json:3:3: invalid character '\"' after object key:value pair"},
		{name: "JSON cut short", file: "room.json", content: "{\n  \"demo\": true,\n", want: "room.json:3:1: unexpected end of file"},
		{name: "JSON after the end", file: "room.json", content: "{\"demo\": true}\n{}", want: "room.json:2:1: data after the top-level value"},
		{name: "two YAML documents", file: "room.yaml", content: "demo: true\n---\nname: x\n", want: "room.yaml:2:1: a second YAML document"},
		{name: "not a mapping", file: "room.yaml", content: "- demo\n", want: "room.yaml:1:1: want a mapping of settings at the top, got a list"},
		{name: "merge keys", file: "room.yaml", content: "base: &b {demo: true}\n<<: *b\n", want: "room.yaml:2:1: merge keys (<<) are not supported"},
		{name: "aliases expanding without end", file: "room.yaml", content: aliasBomb, want: "room.yaml:1:16: the file expands to more than 100000 values"},
		{name: "deep nesting", file: "room.json", content: strings.Repeat("[", 40) + strings.Repeat("]", 40), want: "room.json:1:34: values nest more than 32 deep"},

		// Fields.
		{name: "unknown field", file: "room.yaml", content: "demo: true\ncolour: blue\n", want: "room.yaml:2:1: colour: unknown field; known fields are adminListen, bodyTimeout, bypass, "},
		{name: "misspelt field", file: "room.yaml", content: "demo: true\ntotal_active_users: 3\n", want: "room.yaml:2:1: total_active_users: unknown field; did you mean totalActiveUsers?"},
		{name: "flag name as field", file: "room.json", content: `{"demo": true, "new-users-per-minute": 3}`, want: "room.json:1:16: new-users-per-minute: unknown field; did you mean newUsersPerMinute?"},
		// A typo gets the nearest field, in JSON as in YAML, at any depth.
		{name: "typo in JSON", file: "room.json", content: `{"demo": true, "totalActiveUser": 3}`, want: "room.json:1:16: totalActiveUser: unknown field; did you mean totalActiveUsers?"},
		{name: "typo in YAML", file: "room.yaml", content: "demo: true\ntotalActiveUser: 3\n", want: "room.yaml:2:1: totalActiveUser: unknown field; did you mean totalActiveUsers?"},
		{name: "swapped letters in JSON", file: "room.json", content: `{"demo": true, "negotiateLangauge": false}`, want: "room.json:1:16: negotiateLangauge: unknown field; did you mean negotiateLanguage?"},
		{name: "changed letter in JSON", file: "room.json", content: `{"demo": true, "upstraem": "http://a"}`, want: "room.json:1:16: upstraem: unknown field; did you mean upstream?"},
		{name: "typo in an event in JSON", file: "room.json", content: `{"demo": true, "events": [{"start": "2027-01-01T00:00:00Z", "ned": "2027-01-02T00:00:00Z"}]}`, want: "room.json:1:61: events[0].ned: unknown field; did you mean end?"},
		{name: "typo in a rule's kind", file: "room.json", content: `{"demo": true, "bypass": [{"method": ["OPTIONS"]}]}`, want: "room.json:1:28: bypass[0].method: unknown kind of rule; did you mean methods?"},
		{name: "nothing near in JSON", file: "room.json", content: `{"demo": true, "colour": "blue"}`, want: "room.json:1:16: colour: unknown field; known fields are adminListen, bodyTimeout, bypass, "},
		{name: "set twice", file: "room.yaml", content: "demo: true\nname: a\nname: b\n", want: "room.yaml:3:1: name: set twice (first at line 2)"},
		{name: "set twice in JSON", file: "room.json", content: "{\"demo\": true,\n\"demo\": false}", want: "room.json:2:1: demo: set twice (first at line 1)"},

		// Secrets.
		{name: "cookie key", file: "room.yaml", content: "demo: true\nkey: " + hexKey + "\n", notWant: hexKey,
			want: "room.yaml:2:1: key: secrets are never read from a config file: the cookie keys come only from -key, WAITINGROOM_KEY or WAITINGROOM_KEYS"},
		{name: "cookie keys", file: "room.json", content: `{"demo": true, "keys": ["` + hexKey + `"]}`, notWant: hexKey, want: "room.json:1:16: keys: secrets are never read"},
		{name: "admin token", file: "room.yaml", content: "demo: true\nadmin_token: s3cret-s3cret-s3cret\n", notWant: "s3cret",
			want: "room.yaml:2:1: admin_token: secrets are never read from a config file: the admin token comes only from -admin-token or WAITINGROOM_ADMIN_TOKEN"},
		{name: "pass secret", file: "room.yaml", content: "forwardAuth: true\npassSecret: pass-secret-0123456789abc\n", notWant: "pass-secret-0123",
			want: "room.yaml:2:1: passSecret: secrets are never read from a config file: the pass secret comes only from WAITINGROOM_PASS_SECRET"},

		// Types.
		{name: "number as a string", file: "room.yaml", content: "demo: true\ntotalActiveUsers: many\n", want: "room.yaml:2:19: totalActiveUsers: want a whole number, got a string"},
		{name: "fraction", file: "room.json", content: `{"demo": true, "totalActiveUsers": 2.5}`, want: "room.json:1:36: totalActiveUsers: want a whole number, got the number 2.5"},
		{name: "number out of range", file: "room.yaml", content: "demo: true\ntotalActiveUsers: 99999999999\n", want: "room.yaml:2:19: totalActiveUsers: 99999999999 is out of range"},
		{name: "seconds as a number", file: "room.yaml", content: "demo: true\nsessionDuration: 300\n", want: `room.yaml:2:18: sessionDuration: want a duration such as "90s", "5m" or "1h30m", got the number 300`},
		{name: "bad duration", file: "room.yaml", content: "demo: true\nrefreshInterval: 20 seconds\n", want: "room.yaml:2:18: refreshInterval: want a duration"},
		{name: "yes for true", file: "room.yaml", content: "demo: yes\n", want: "room.yaml:1:7: demo: want true or false, got a string"},
		{name: "number for a string", file: "room.yaml", content: "demo: true\nname: 2024\n", want: "room.yaml:2:7: name: want a string, got the number 2024 (quote it)"},
		{name: "list for a string", file: "room.json", content: `{"upstream": ["http://a"]}`, want: "room.json:1:14: upstream: want a string, got a list"},

		// Values.
		{name: "queueing method", file: "room.yaml", content: "demo: true\nqueueingMethod: lifo\n", want: `room.yaml:2:17: queueingMethod: QueueingMethod "lifo" is not fifo, random, passthrough or reject`},
		{name: "status code", file: "room.yaml", content: "demo: true\nqueueingStatusCode: 503\n", want: "room.yaml:2:21: queueingStatusCode: QueueingStatusCode must be 200, 202 or 429, got 503"},
		{name: "room name", file: "room.yaml", content: "demo: true\nname: my shop\n", want: `room.yaml:2:7: name: Name "my shop" must be 1 to 64 letters`},
		{name: "limits", file: "room.yaml", content: "demo: true\ntotalActiveUsers: 0\n", want: "room.yaml:2:19: totalActiveUsers: TotalActiveUsers must be > 0, got 0"},
		{name: "limits together", file: "room.yaml", content: "demo: true\ntotalActiveUsers: 10\nnewUsersPerMinute: 20\n",
			want: "room.yaml:3:20: newUsersPerMinute (20) must not exceed room.yaml:2:19: totalActiveUsers (10)"},
		{name: "limits with a flag", file: "room.yaml", content: "demo: true\nnewUsersPerMinute: 20\n", args: []string{"-total-active-users", "10"},
			want: "room.yaml:2:20: newUsersPerMinute (20) must not exceed -total-active-users (10)"},
		{name: "session", file: "room.yaml", content: "demo: true\nsessionDuration: 2h\n", want: "room.yaml:2:18: sessionDuration: SessionDuration must be between 1m0s and 30m0s, got 2h0m0s"},
		{name: "hold and refresh", file: "room.yaml", content: "demo: true\nqueueHold: 30s\n",
			want: "room.yaml:2:12: queueHold (30s) must be at least twice -refresh-interval (20s)"},
		{name: "refresh without a hold", file: "room.yaml", content: "demo: true\nrefreshInterval: 3m\n",
			want: "room.yaml:2:18: refreshInterval (3m0s) is more than half the default queue hold (5m0s): set queueHold in a config file to at least twice it"},
		{name: "language", file: "room.yaml", content: "demo: true\nlanguage: xx\n", want: `room.yaml:2:11: language: Page.Language "xx" is not one of`},
		{name: "health path", file: "room.yaml", content: "demo: true\nhealthPath: healthz\n", want: `room.yaml:2:13: healthPath "healthz" must start with /`},
		{name: "lottery path", file: "room.yaml", content: "demo: true\nlotteryPath: lottery\n", want: `room.yaml:2:14: lotteryPath "lottery" must start with /`},
		{name: "sync interval", file: "room.yaml", content: "demo: true\nsyncInterval: 0s\n", want: "room.yaml:2:15: syncInterval must be > 0, got 0s"},
		{name: "upstream and demo", file: "room.yaml", content: "demo: true\nupstream: http://127.0.0.1:3000\n", want: "give exactly one of room.yaml:2:11: upstream and room.yaml:1:7: demo, not both"},
		{name: "upstream and -demo", file: "room.yaml", content: "upstream: http://127.0.0.1:3000\n", args: []string{"-demo"}, want: "give exactly one of room.yaml:1:11: upstream and -demo, not both"},
		{name: "upstream URL", file: "room.yaml", content: "upstream: ftp://files\n", want: `room.yaml:1:11: upstream "ftp://files" is not an http(s) URL`},
		{name: "host", file: "room.yaml", content: "upstream: http://127.0.0.1:3000\nhost: client\n", want: `room.yaml:2:7: host "client": want original or upstream`},
		{name: "host with the demo", file: "room.yaml", content: "demo: true\nhost: upstream\n", want: "room.yaml:2:7: host applies to an upstream only, not to -demo"},
		{name: "admin without a token", file: "room.yaml", content: "demo: true\nadminListen: 127.0.0.1:9090\n",
			want: "room.yaml:2:14: adminListen needs -admin-token or WAITINGROOM_ADMIN_TOKEN"},
		{name: "store", file: "room.yaml", content: "demo: true\nstore: redis://:hunter2@127.0.0.1:6379/zero\n", notWant: "hunter2",
			want: "room.yaml:2:8: store redis://:xxxxx@127.0.0.1:6379/zero: redis: invalid database number"},
		{name: "store prefix without Redis", file: "room.yaml", content: "demo: true\nstorePrefix: 'x:'\n", want: "room.yaml:2:14: storePrefix applies to Redis stores only"},
		{name: "create schema without SQL", file: "room.yaml", content: "demo: true\ncreateSchema: true\n", want: "room.yaml:2:15: createSchema: -store-table and -create-schema apply to SQL stores only"},
		{name: "table", file: "room.yaml", content: "demo: true\nstore: sqlite:///tmp/x.db\nstoreTable: a b\n", want: `room.yaml:3:13: storeTable "a b" is not a plain identifier`},
		{name: "template missing", file: "room.yaml", content: "demo: true\ntemplate: missing.mustache\n", want: "room.yaml:2:11: template: open "},
		{name: "template does not parse", file: "room.yaml", content: "demo: true\ntemplate: " + tmpl + "\n", want: "room.yaml:2:11: template "},
		{name: "trusted proxies", file: "room.yaml", content: "demo: true\ntrustedProxies: [10.0.0.0/8, 10.0.0.300/32]\n",
			want: `room.yaml:2:30: trustedProxies[1]: want a network such as 10.0.0.0/8 or 2001:db8::/32, got "10.0.0.300/32"`},

		// Bypass rules.
		{name: "bypass: not a list", file: "room.yaml", content: "demo: true\nbypass: {pathPrefix: [/static/]}\n", want: "room.yaml:2:9: bypass: want a list, got a mapping"},
		{name: "bypass: empty rule", file: "room.yaml", content: "demo: true\nbypass:\n  - {}\n", want: "room.yaml:3:5: bypass[0]: a rule has exactly one of pathPrefix, pathPrefixCaseSensitive, methods, networks, header, cookie; this one has 0"},
		{name: "bypass: two kinds", file: "room.yaml", content: "demo: true\nbypass:\n  - pathPrefix: [/a/]\n    methods: [GET]\n", want: "room.yaml:3:5: bypass[0]: a rule has exactly one of"},
		{name: "bypass: unknown kind", file: "room.yaml", content: "demo: true\nbypass:\n  - query: x\n", want: "room.yaml:3:5: bypass[0].query: unknown kind of rule"},
		{name: "bypass: empty list", file: "room.yaml", content: "demo: true\nbypass:\n  - pathPrefix: []\n", want: "room.yaml:3:17: bypass[0].pathPrefix: the list is empty"},
		{name: "bypass: relative prefix", file: "room.yaml", content: "demo: true\nbypass:\n  - pathPrefix: [/a/, static/]\n", want: `room.yaml:3:23: bypass[0].pathPrefix[1]: "static/" must start with /`},
		{name: "bypass: empty prefix", file: "room.yaml", content: "demo: true\nbypass:\n  - pathPrefix: [/a/, '']\n", want: "room.yaml:3:23: bypass[0].pathPrefix[1]: empty"},
		{name: "bypass: lower-case method", file: "room.yaml", content: "demo: true\nbypass:\n  - methods: [get]\n", want: "room.yaml:3:15: bypass[0].methods[0]: methods are case-sensitive: write GET, not get"},
		{name: "bypass: method", file: "room.yaml", content: "demo: true\nbypass:\n  - methods: GET POST\n", want: `room.yaml:3:14: bypass[0].methods: "GET POST" is not a method`},
		{name: "bypass: network", file: "room.yaml", content: "demo: true\nbypass:\n  - networks: [10.0.0.0]\n", want: "room.yaml:3:16: bypass[0].networks[0]: want a network"},
		{name: "bypass: header without a name", file: "room.yaml", content: "demo: true\nbypass:\n  - header: {value: x}\n", want: "room.yaml:3:13: bypass[0].header: name is required"},
		{name: "bypass: header name", file: "room.yaml", content: "demo: true\nbypass:\n  - header: {name: 'X Monitor'}\n", want: `room.yaml:3:13: bypass[0].header.name: "X Monitor" is not a header name`},
		{name: "bypass: header field", file: "room.yaml", content: "demo: true\nbypass:\n  - header: {name: X-A, prefix: x}\n", want: "room.yaml:3:25: bypass[0].header.prefix: unknown field; known fields are name, value"},
		{name: "bypass: cookie as a string", file: "room.json", content: `{"demo": true, "bypass": [{"cookie": "staff"}]}`, want: "room.json:1:38: bypass[0].cookie: want a mapping, got a string"},

		// Events.
		{name: "events: time", file: "room.yaml", content: "demo: true\nevents:\n  - {name: a, start: 2027-01-01 10:00, end: 2027-01-01T11:00:00Z}\n",
			want: "room.yaml:3:22: events[0].start: want an RFC 3339 time such as 2026-12-04T10:00:00Z"},
		{name: "events: order", file: "room.yaml", content: "demo: true\nevents:\n  - name: a\n    start: 2027-01-01T11:00:00Z\n    end: 2027-01-01T10:00:00Z\n",
			want: `room.yaml:3:5: events[0]: event "a" ends before it starts`},
		{name: "events: shuffle", file: "room.yaml", content: "demo: true\nevents:\n  - {name: a, start: 2027-01-01T10:00:00Z, end: 2027-01-01T11:00:00Z, shuffleAtStart: true}\n",
			want: `room.yaml:3:5: events[0]: event "a": ShuffleAtStart needs a pre-queue (PrequeueStart)`},
		{name: "events: overlap", file: "room.yaml", content: "demo: true\nevents:\n  - {name: a, start: 2027-01-01T10:00:00Z, end: 2027-01-01T11:00:00Z}\n  - {name: b, start: 2027-01-01T10:30:00Z, end: 2027-01-01T12:00:00Z}\n",
			want: `room.yaml:3:3: events: events "a" and "b" overlap`},
		{name: "events: field", file: "room.yaml", content: "demo: true\nevents:\n  - {name: a, begin: 2027-01-01T10:00:00Z}\n", want: "room.yaml:3:15: events[0].begin: unknown field"},
		{name: "events: template", file: "room.yaml", content: "demo: true\nevents:\n  - {name: a, start: 2027-01-01T10:00:00Z, end: 2027-01-01T11:00:00Z, template: nope.mustache}\n",
			want: "room.yaml:3:81: events[0].template: open "},
		{name: "events: bad template", file: "room.yaml", content: "demo: true\nevents:\n  - {name: a, start: 2027-01-01T10:00:00Z, end: 2027-01-01T11:00:00Z, template: " + tmpl + "}\n",
			want: `room.yaml:3:5: events[0]: event "a": Template: waitingroom/template:`},
		{name: "events: limits", file: "room.json", content: `{"demo": true, "events": [{"name": "a", "start": "2027-01-01T10:00:00Z", "end": "2027-01-01T11:00:00Z", "totalActiveUsers": 10}]}`,
			want: `room.json:1:27: events[0]: event "a": set TotalActiveUsers and NewUsersPerMinute together`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noEnv(t)
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, tmpl), []byte("{{#unclosed}}"), 0o600))
			path := filepath.Join(dir, tc.file)
			require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o600))
			var stderr bytes.Buffer
			code := run(context.Background(), append([]string{"-config", path, "-key", hexKey}, tc.args...), io.Discard, &stderr, nil)
			assert.Equal(t, 2, code)
			assert.True(t, strings.HasPrefix(stderr.String(), "waitingroom: "), stderr.String())
			assert.Contains(t, stderr.String(), path, "the message names the file")
			assert.Contains(t, stderr.String(), strings.ReplaceAll(tc.want, tc.file, path))
			if tc.notWant != "" {
				assert.NotContains(t, stderr.String(), tc.notWant)
			}
		})
	}
}

// aliasBomb is a YAML file whose aliases would expand to 10^9 values.
var aliasBomb = func() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	return b.String()
}()

func TestFlagErrors(t *testing.T) {
	noEnv(t)
	bad := writeFile(t, "bad.mustache", "{{#a}}")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no config file", []string{"-config", "testdata/missing.yaml"}, "-config: open testdata/missing.yaml: no such file or directory"},
		{"template missing", []string{"-demo", "-template", "testdata/missing.mustache"}, "-template: open testdata/missing.mustache"},
		{"template does not parse", []string{"-demo", "-template", bad}, "-template " + bad + " does not parse: waitingroom/template:"},
		{"host", []string{"-upstream", "http://127.0.0.1:1", "-host", "client"}, `-host "client": want original or upstream`},
		{"host with the demo", []string{"-demo", "-host", "upstream"}, "-host applies to an upstream only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			assert.Equal(t, 2, run(context.Background(), append(tc.args, "-key", hexKey), io.Discard, &stderr, nil))
			assert.Contains(t, stderr.String(), "waitingroom: "+tc.want)
		})
	}
}

// fuzzTemplate is the one file the fuzzed decoder can read.
const fuzzTemplate = "<p>{{waitTimeFormatted}}</p>"

// FuzzConfigFile feeds the config file decoder arbitrary JSON and YAML: it
// never panics, never reads a file the config does not name, and every
// error names the file.
func FuzzConfigFile(f *testing.F) {
	example, err := os.ReadFile("testdata/example.yaml")
	require.NoError(f, err)
	f.Add(example, false)
	f.Add([]byte(`{"demo": true, "bypass": [{"header": {"name": "X-A"}}], "events": [{"name": "a", "start": "2027-01-01T10:00:00Z", "end": "2027-01-01T11:00:00Z"}]}`), true)
	f.Fuzz(func(t *testing.T, data []byte, isJSON bool) {
		name := "fuzz.yaml"
		if isJSON {
			name = "fuzz.json"
		}
		d := &fileDecoder{name: name, dir: "conf", readFile: func(path string) ([]byte, error) {
			if filepath.Base(path) == "page.mustache" {
				return []byte(fuzzTemplate), nil
			}
			return nil, fs.ErrNotExist
		}}
		vals, err := d.decode(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), name+":") {
				t.Fatalf("the error does not start with the file's name: %v", err)
			}
			return
		}
		o := &options{}
		for _, v := range vals {
			if !strings.HasPrefix(v.where, name+":") {
				t.Fatalf("a setting's position does not start with the file's name: %q", v.where)
			}
			v.set(o)
		}
	})
}

// suggest names the field a misspelt one stands for: one folding alike,
// else the single nearest within a third of its length (1 to 3 edits).
func TestSuggest(t *testing.T) {
	names := []string{"end", "listen", "name", "newUsersPerMinute", "sessionDuration", "start", "totalActiveUsers", "upstream"}
	for _, tc := range []struct {
		field, want string
	}{
		{"total_active_users", "totalActiveUsers"},
		{"TOTAL-ACTIVE-USERS", "totalActiveUsers"},
		{"totalActiveUser", "totalActiveUsers"},
		{"totalActvieUsers", "totalActiveUsers"},
		{"totalActiveUsersX", "totalActiveUsers"},
		{"sesionDuration", "sessionDuration"},
		{"sessionDurationn", "sessionDuration"},
		{"newUserPerMin", ""}, // 3 edits, but a third of 13 is 4: too far
		{"listne", "listen"},
		{"nmae", "name"},
		{"ned", "end"},
		{"stat", "start"},
		{"x", ""},
		{"colour", ""},
		{"totalUsers", ""},
	} {
		t.Run(tc.field, func(t *testing.T) {
			assert.Equal(t, tc.want, suggest(tc.field, names))
		})
	}
	// Two equally near: none.
	assert.Empty(t, suggest("nam", []string{"name", "nap"}))
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "abc", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"abc", "abd", 1},
		{"abc", "acb", 1},
		{"abc", "ab", 1},
		{"ab", "abc", 1},
		{"kitten", "sitting", 3},
		{"ca", "abc", 3},
	} {
		assert.Equal(t, tc.want, editDistance(tc.a, tc.b), "%q → %q", tc.a, tc.b)
		assert.Equal(t, tc.want, editDistance(tc.b, tc.a), "%q → %q", tc.b, tc.a)
	}
}
