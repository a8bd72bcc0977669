package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/template"
)

// TestLotteryPathSettings: -lottery-path and the config file's
// lotteryPath set the path (off by default, the flag overriding the
// file); a relative path, or one another endpoint outside the room
// already answers, exits with status 2.
func TestLotteryPathSettings(t *testing.T) {
	noEnv(t)
	for _, tc := range []struct {
		name    string
		args    []string
		file    string // the config file's content, if any
		want    string // the path
		wantErr string // what stderr says, exit status 2
	}{
		{name: "off by default", args: []string{"-demo"}, want: ""},
		{name: "flag", args: []string{"-demo", "-lottery-path", "/lottery"}, want: "/lottery"},
		{name: "config key", file: "demo: true\nlotteryPath: /.well-known/lottery\n", want: "/.well-known/lottery"},
		{name: "the flag overrides the file", args: []string{"-lottery-path", "/draws"}, file: "demo: true\nlotteryPath: /lottery\n", want: "/draws"},
		{name: "the flag turns the file's off", args: []string{"-lottery-path", ""}, file: "demo: true\nlotteryPath: /lottery\n", want: ""},
		{name: "beside the health check", args: []string{"-demo", "-lottery-path", "/lottery", "-health-path", "/lottery/health"}, want: "/lottery"},
		{name: "relative flag", args: []string{"-demo", "-lottery-path", "lottery"}, wantErr: `waitingroom: -lottery-path "lottery" must start with /`},
		{name: "relative key", file: "demo: true\nlotteryPath: lottery\n", wantErr: `room.yaml:2:14: lotteryPath "lottery" must start with /`},
		{name: "the health check's path", args: []string{"-demo", "-lottery-path", "/healthz"}, wantErr: `-lottery-path and -health-path are both "/healthz"`},
		{name: "the health check's path in the file", args: []string{"-health-path", "/lottery"}, file: "demo: true\nlotteryPath: /lottery\n",
			wantErr: `room.yaml:2:14: lotteryPath and -health-path are both "/lottery"`},
		{name: "the demo's report", args: []string{"-demo", "-lottery-path", "/active"}, wantErr: `-lottery-path "/active" is the demo's report`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append([]string{"-config", writeFile(t, "room.yaml", tc.file)}, args...)
			}
			args = append(args, "-key", hexKey)
			if tc.wantErr != "" {
				var stderr bytes.Buffer
				assert.Equal(t, exitUsage, run(context.Background(), args, io.Discard, &stderr, nil))
				assert.Contains(t, stderr.String(), tc.wantErr)
				return
			}
			o, err := parse(args, io.Discard)
			require.NoError(t, err)
			assert.Equal(t, tc.want, o.lotteryPath)
		})
	}
}

// TestLotteryPath: with -lottery-path, the public address answers GET of
// that path (and only of that exact path) with the room's lottery
// records, outside the room: in a full room, to a visitor with no
// cookie, without queueing them or setting a cookie, whether the command
// proxies an upstream or answers the auth requests of the server in
// front. Without it, the path goes through the room.
func TestLotteryPath(t *testing.T) {
	noEnv(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "upstream "+r.URL.Path)
	}))
	t.Cleanup(up.Close)
	proxy := []string{"-upstream", up.URL}
	// Envoy's auth requests are the original requests themselves, so a
	// plain GET is the auth request for its own path.
	forwardAuth := []string{"-forward-auth", "-front-door", "envoy", "-trusted-proxies", "127.0.0.1/32"}
	for _, tc := range []struct {
		name    string
		mode    []string
		lottery string // -lottery-path
		path    string // the path asked for
		served  bool   // answered with the records, outside the room
		// admitted is the body the visitor who took the one slot gets
		// for path, when the room lets it through.
		admitted string
	}{
		{name: "proxy", mode: proxy, lottery: "/lottery", path: "/lottery", served: true},
		{name: "forward-auth", mode: forwardAuth, lottery: "/lottery", path: "/lottery", served: true},
		{name: "proxy, off", mode: proxy, path: "/lottery", admitted: "upstream /lottery"},
		{name: "forward-auth, off", mode: forwardAuth, path: "/lottery"},
		{name: "proxy, an exact match", mode: proxy, lottery: "/lottery", path: "/lottery/", admitted: "upstream /lottery/"},
		{name: "forward-auth, an exact match", mode: forwardAuth, lottery: "/lottery", path: "/lottery/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(tc.mode, "-key", hexKey, "-queueing-method", "random",
				"-total-active-users", "1", "-new-users-per-minute", "1")
			if tc.lottery != "" {
				args = append(args, "-lottery-path", tc.lottery)
			}
			base := start(t, args...)

			first := browser(t)
			resp, _ := get(t, first, base+"/")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.NotEmpty(t, resp.Header.Values("Set-Cookie"), "the first visitor takes the one slot")

			if !tc.served {
				resp, body := get(t, first, base+tc.path)
				assert.Equal(t, http.StatusOK, resp.StatusCode, "the admitted visitor passes")
				assert.Equal(t, tc.admitted, body)
				resp, _ = get(t, browser(t), base+tc.path)
				assert.NotEmpty(t, resp.Header.Get("Refresh"), "a new visitor waits")
				assert.NotEmpty(t, resp.Header.Values("Set-Cookie"), "a new visitor gets the room's cookie")
				return
			}

			var committed int64 // the start of a period committed to
			for _, c := range []*http.Client{first, browser(t), browser(t)} {
				resp, body := get(t, c, base+tc.path)
				assert.Equal(t, http.StatusOK, resp.StatusCode)
				assert.Contains(t, resp.Header.Get("Content-Type"), "application/json")
				assert.Empty(t, resp.Header.Get("Refresh"), "no waiting page")
				assert.Empty(t, resp.Header.Values("Set-Cookie"), "outside the room")
				var records map[string]*struct {
					Start      int64  `json:"start"`
					Commitment string `json:"commitment"`
				}
				require.NoError(t, json.Unmarshal([]byte(body), &records), body)
				for _, k := range []string{"current", "next", "revealed"} {
					assert.Contains(t, records, k)
				}
				// A new room's first period starts the second after its
				// first sync: until then, it is the next.
				r := cmp.Or(records["current"], records["next"])
				require.NotNil(t, r, "the room has committed to a period: %s", body)
				assert.NotEmpty(t, r.Commitment)
				committed = r.Start
			}

			for _, q := range []struct {
				at   string
				code int
			}{
				{"bad", http.StatusBadRequest},
				{strconv.FormatInt(committed, 10), http.StatusOK},
				{time.Unix(committed, 0).UTC().Format(time.RFC3339), http.StatusOK},
				{time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339), http.StatusNotFound},
			} {
				resp, body := get(t, browser(t), base+tc.path+"?at="+q.at)
				assert.Equal(t, q.code, resp.StatusCode, "?at=%s: %s", q.at, body)
				assert.Contains(t, resp.Header.Get("Content-Type"), "application/json", "?at=%s", q.at)
				assert.Empty(t, resp.Header.Values("Set-Cookie"), "?at=%s is outside the room", q.at)
			}

			req, err := http.NewRequest(http.MethodPost, base+tc.path, nil)
			require.NoError(t, err)
			resp, err = browser(t).Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
		})
	}
}

// waitingJSON is the room's data in the waiting JSON c gets for url.
func waitingJSON(t require.TestingT, c *http.Client, url string) template.Data {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Room template.Data `json:"waitingRoom"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.True(t, body.Room.InWaitingRoom, "a waiting page")
	return body.Room
}

// TestLotteryPathLinked: with -lottery-path, the waiting page of a
// visitor whose admission is a draw (random queueing on two proxies
// sharing a store) links to the record of the period in progress: its
// JSON's lotteryRecords is the path with ?at= the period's start, which
// answers the record of the commitment the page shows, and the page links
// to it. Without -lottery-path, no link.
func TestLotteryPathLinked(t *testing.T) {
	noEnv(t)
	for _, tc := range []struct{ name, lottery string }{
		{"linked", "/lottery"},
		{"off", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"-demo", "-key", hexKey, "-queueing-method", "random",
				"-total-active-users", "1", "-new-users-per-minute", "1", "-sync-interval", "100ms",
				"-store", "sqlite://" + filepath.Join(t.TempDir(), "rooms.db")}
			if tc.lottery != "" {
				args = append(args, "-lottery-path", tc.lottery)
			}
			base := start(t, args...)
			start(t, args...) // the other instance
			resp, _ := get(t, browser(t), base+"/")
			require.NotEmpty(t, resp.Header.Values("Set-Cookie"), "the first visitor takes the one slot")

			// Once each proxy knows of the other and the room's first
			// period has begun (the second after its first sync), a
			// waiting visitor's admission is a draw.
			visitor := browser(t)
			var d template.Data
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				d = waitingJSON(c, visitor, base+"/")
				assert.NotEmpty(c, d.LotteryIdentity)
			}, 10*time.Second, 50*time.Millisecond, "a draw")
			_, page := get(t, visitor, base+"/")
			if tc.lottery == "" {
				assert.Empty(t, d.LotteryRecords)
				assert.NotContains(t, page, "data-wr-text=\"lotteryRecords\" href=")
				return
			}
			d = waitingJSON(t, visitor, base+"/") // as the page just shown
			at, ok := strings.CutPrefix(d.LotteryRecords, tc.lottery+"?at=")
			require.True(t, ok, "%q", d.LotteryRecords)
			assert.Contains(t, page, ` href="`+html.EscapeString(d.LotteryRecords)+`">`, "the page links to it")

			resp, body := get(t, browser(t), base+d.LotteryRecords)
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			var rec struct {
				Start      int64  `json:"start"`
				End        int64  `json:"end"`
				Commitment string `json:"commitment"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &rec), body)
			assert.Equal(t, at, strconv.FormatInt(rec.Start, 10), "at= is the period's start")
			assert.Equal(t, d.LotteryCommitment, rec.Commitment, "the record of the commitment shown")
		})
	}
}
