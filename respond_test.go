package waitingroom

import (
	"encoding/json"
	"html"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/lottery"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/go-waitingroom/waitingroom/template"
)

func TestCookieAttributes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mutate   func(*Config)
		sameSite http.SameSite
		secure   bool
	}{
		{"auto over http", nil, http.SameSiteLaxMode, false},
		{"auto over https", func(c *Config) { c.Cookie.Secure = true }, http.SameSiteNoneMode, true},
		{"strict", func(c *Config) { c.Cookie.SameSite = http.SameSiteStrictMode }, http.SameSiteStrictMode, false},
		{"https, lax", func(c *Config) { c.Cookie.Secure = true; c.Cookie.SameSite = http.SameSiteLaxMode }, http.SameSiteLaxMode, true},
		{"domain and path", func(c *Config) { c.Cookie.Domain = "example.com"; c.Cookie.Path = "/shop" }, http.SameSiteLaxMode, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRoom(t, tc.mutate)
			w := tr.get(&visitor{}, "")
			require.True(t, admitted(w))
			cs := w.Result().Cookies()
			require.Len(t, cs, 1)
			c := cs[0]
			assert.Equal(t, "__waitingroom_launch", c.Name)
			assert.Equal(t, tc.sameSite, c.SameSite)
			assert.Equal(t, tc.secure, c.Secure)
			assert.Equal(t, tc.sameSite == http.SameSiteNoneMode, c.Partitioned, "partitioned with SameSite=None, for iframes")
			assert.True(t, c.HttpOnly)
			assert.Equal(t, tr.cfg.Cookie.Path, c.Path)
			assert.Equal(t, tr.cfg.Cookie.Domain, c.Domain)
		})
	}
}

func TestStatusCodes(t *testing.T) {
	for _, code := range []int{http.StatusOK, http.StatusAccepted, http.StatusTooManyRequests} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			tr := newTestRoom(t, func(c *Config) { c.QueueAll = true; c.QueueingStatusCode = code })
			w := tr.get(&visitor{}, "")
			assert.Equal(t, code, w.Code)
			if code == http.StatusTooManyRequests {
				assert.Equal(t, w.Header().Get("Refresh"), w.Header().Get("Retry-After"))
			} else {
				assert.Empty(t, w.Header().Get("Retry-After"))
			}
		})
	}
}

func TestJSONResponse(t *testing.T) {
	for _, key := range []string{"", "cfWaitingRoom"} {
		t.Run("key="+key, func(t *testing.T) {
			tr := newTestRoom(t, func(c *Config) {
				c.TotalActiveUsers, c.NewUsersPerMinute = 10, 10
				c.Page.JSONKey = key
			})
			// Ten admitted in the first minute: outflow is 10 a minute.
			for range 10 {
				require.True(t, admitted(tr.get(&visitor{}, "")))
			}
			for range 30 {
				require.True(t, isWaiting(tr.get(&visitor{}, "")))
			}
			tr.clk.Add(45 * time.Second)
			tr.sync()
			w := tr.get(&visitor{}, "application/json")
			require.Equal(t, http.StatusOK, w.Code)
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
			var body map[string]map[string]any
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
			want := key
			if want == "" {
				want = "waitingRoom"
			}
			require.Contains(t, body, want)
			got := body[want]
			refresh, _ := got["refreshIntervalSeconds"].(float64)
			assert.InDelta(t, 20, refresh, 2.5)
			lastUpdated, _ := got["lastUpdated"].(string)
			assert.Equal(t, tr.clk.Now().UTC().Format("2006-01-02T15:04:05.000Z"), lastUpdated)
			delete(got, "refreshIntervalSeconds")
			delete(got, "lastUpdated")
			// All 10 slots held by sessions of 5 minutes (the default)
			// and 30 ahead: this visitor gets the slot that comes round
			// for the fourth time, 5 + 3 × 5 minutes from now.
			assert.Equal(t, map[string]any{
				"inWaitingRoom":                true,
				"waitTimeKnown":                true,
				"waitTime":                     float64(20),
				"waitTimeHours":                float64(0),
				"waitTimeHourMinutes":          float64(20),
				"waitTime25Percentile":         float64(0),
				"waitTime50Percentile":         float64(0),
				"waitTime75Percentile":         float64(0),
				"waitTimeFormatted":            "20 minutes",
				"positionInLine":               float64(31), // behind the 30 waiting
				"queueLength":                  float64(31), // and the last
				"chancePerRefreshOneIn":        float64(0),
				"queueIsFull":                  false,
				"queueAll":                     false,
				"queueingMethod":               "fifo",
				"isFIFOQueue":                  true,
				"isRandomQueue":                false,
				"isPassthroughQueue":           false,
				"isRejectQueue":                false,
				"isEventActive":                false,
				"isEventPrequeueing":           false,
				"shuffleAtEventStart":          false,
				"timeUntilEventStart":          float64(0),
				"timeUntilEventStartFormatted": "unavailable",
				"timeUntilEventEnd":            float64(0),
				"timeUntilEventEndFormatted":   "unavailable",
			}, got)
		})
	}
}

// TestPlaceInLine holds what the page shows of a visitor's place: FIFO,
// the position; random, the chance at each refresh, as 1 in n, from the
// chance a minute the median implies.
func TestPlaceInLine(t *testing.T) {
	fifo := &template.Data{IsFIFOQueue: true, RefreshIntervalSeconds: 20}
	random := &template.Data{IsRandomQueue: true, RefreshIntervalSeconds: 20}
	for _, tc := range []struct {
		name          string
		e             Estimate
		d             *template.Data
		position, one int
	}{
		{"fifo", Estimate{Known: true, Position: 31}, fifo, 31, 0},
		{"fifo, wait unknown", Estimate{Position: 31}, fifo, 31, 0},
		{"fifo, nothing known", Estimate{}, fifo, 0, 0},
		// 10 % a minute is 1 − 0.9^(1/3) ≈ 3.5 % per 20-second refresh.
		{"random", Estimate{Known: true, ChancePerMinute: 0.1}, random, 0, 29},
		{"random, certain", Estimate{Known: true, ChancePerMinute: 1}, random, 0, 1},
		{"random, slim", Estimate{ChancePerMinute: 1e-12}, random, 0, 1e9},
		{"random, unknown", Estimate{}, random, 0, 0},
		{"random, no refresh", Estimate{ChancePerMinute: 0.1}, &template.Data{IsRandomQueue: true}, 0, 0},
		// A retry in 5 s is a refresh's chance, not a quarter of one.
		{"random, a retry", Estimate{Known: true, ChancePerMinute: 0.1}, &template.Data{IsRandomQueue: true, RefreshIntervalSeconds: 5}, 0, 29},
	} {
		t.Run(tc.name, func(t *testing.T) {
			position, one := placeInLine(tc.e, tc.d, 20*time.Second)
			assert.Equal(t, tc.position, position)
			assert.Equal(t, tc.one, one)
		})
	}
	// In a room: the FIFO JSON shows the position behind those waiting,
	// the random one a chance.
	for _, method := range []QueueingMethod{FIFO, Random} {
		tr := newTestRoom(t, func(c *Config) {
			c.TotalActiveUsers, c.NewUsersPerMinute, c.QueueingMethod = 1000, 10, method
		})
		for range 10 {
			require.True(t, admitted(tr.get(&visitor{}, "")))
		}
		for range 30 {
			require.True(t, isWaiting(tr.get(&visitor{}, "")))
		}
		tr.clk.Add(30 * time.Second)
		tr.sync()
		got := jsonBody(t, tr.get(&visitor{}, "application/json"))
		if method == FIFO {
			assert.Equal(t, 31.0, got["positionInLine"])
			assert.Equal(t, 0.0, got["chancePerRefreshOneIn"])
			continue
		}
		assert.Equal(t, 0.0, got["positionInLine"])
		assert.Greater(t, got["chancePerRefreshOneIn"], 1.0)
		assert.Less(t, got["chancePerRefreshOneIn"], 31.0)
	}
}

func TestCeilSecondsAndMinutes(t *testing.T) {
	for _, tc := range []struct {
		ms               int64
		seconds, minutes int
	}{
		{-5000, 1, 0}, {0, 1, 0}, {1, 1, 1}, {999, 1, 1}, {1000, 1, 1}, {1001, 2, 1},
		{59_999, 60, 1}, {60_000, 60, 1}, {60_001, 61, 2}, {3_600_000, 3600, 60},
	} {
		assert.Equal(t, tc.seconds, ceilSeconds(tc.ms), "ceilSeconds(%d)", tc.ms)
		assert.Equal(t, tc.minutes, ceilMinutes(tc.ms), "ceilMinutes(%d)", tc.ms)
	}
}

// A visitor whose admission is a draw (random, on one instance or more)
// is shown their identity in it, which their cookie holds, the commitment
// to the seed of the hour in progress, which the room's status shows too,
// the interval in progress with the odds the state fixed for its draw
// and, where Page.LotteryRecords says, the URL of the hour's record;
// nobody else is shown either (FIFO, a visitor let in).
func TestLotteryShown(t *testing.T) {
	for _, tc := range []struct {
		name      string
		method    QueueingMethod
		instances int
		records   string // Page.LotteryRecords
		shown     bool
		link      string // lotteryRecords before its at=
	}{
		{"random, two instances", Random, 2, "", true, ""},
		{"random, two instances, records published", Random, 2, "/lottery", true, "/lottery?at="},
		{"random, records after a query", Random, 2, "https://audit.example/lottery?room=shop", true, "https://audit.example/lottery?room=shop&at="},
		{"random, one instance", Random, 1, "/lottery", true, "/lottery?at="},
		{"fifo, two instances", FIFO, 2, "/lottery", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk, st := newClock(), memstore.New()
			rooms := make([]*testRoom, tc.instances)
			for i := range rooms {
				rooms[i] = newTestRoomOn(t, clk, st, func(c *Config) {
					c.TotalActiveUsers, c.NewUsersPerMinute, c.QueueingMethod = 1000, 1, tc.method
					c.Page.LotteryRecords = tc.records
				})
			}
			tr := rooms[0]
			// An hour on: a room's first sync commits to the next hour's
			// seed, not to the hour in progress.
			for _, rm := range rooms {
				rm.sync()
			}
			clk.Add(time.Hour)
			for range 2 { // every instance knows of the others
				for _, rm := range rooms {
					rm.sync()
				}
			}
			require.True(t, admitted(tr.get(&visitor{}, "application/json")))
			v := &visitor{}
			got := jsonBody(t, tr.get(v, "application/json"))
			require.Equal(t, true, got["inWaitingRoom"])
			if !tc.shown {
				for _, k := range []string{"lotteryIdentity", "lotteryCommitment", "lotteryInterval", "lotteryOdds", "lotteryRecords"} {
					assert.NotContains(t, got, k)
				}
				return
			}
			s, err := tr.codec.decode(strings.TrimPrefix(v.cookie, tr.cookieName+"="))
			require.NoError(t, err)
			assert.Equal(t, lottery.FormatIdentity(s.id), got["lotteryIdentity"])
			r, ok := tr.syncer.Snapshot().RecordAt(tr.now(), tr.cfg.RefreshInterval.Milliseconds())
			c := r.Commitment
			require.True(t, ok, "the hour in progress has a seed")
			assert.Equal(t, c.String(), got["lotteryCommitment"])
			w, o, ok := tr.syncer.Snapshot().OddsAt(tr.now(), tr.cfg.RefreshInterval.Milliseconds())
			require.True(t, ok, "the interval's odds are fixed")
			assert.Equal(t, float64(w), got["lotteryInterval"])
			assert.Equal(t, o, got["lotteryOdds"])
			assert.Positive(t, o)
			var status []lottery.Hash
			for _, r := range tr.syncer.Lottery() {
				status = append(status, r.Commitment)
			}
			assert.Contains(t, status, c, "the status shows the same")
			if tc.link == "" {
				assert.NotContains(t, got, "lotteryRecords")
			} else {
				// The link's at= is the start of the period whose
				// commitment the page shows: admin.Records answers its
				// record.
				link, _ := got["lotteryRecords"].(string)
				at, ok := strings.CutPrefix(link, tc.link)
				require.True(t, ok, "%q", link)
				sec, err := strconv.ParseInt(at, 10, 64)
				require.NoError(t, err)
				assert.Equal(t, r.Start, sec)
				p, ok := tr.syncer.Snapshot().RecordAt(sec*1000, 0)
				require.True(t, ok)
				assert.Equal(t, c, p.Commitment, "the period at= holds is the one shown")
				assert.Contains(t, tr.get(&visitor{cookie: v.cookie}, "text/html").Body.String(), ` href="`+html.EscapeString(link)+`">`, "the page links to it")
			}
			// A copy of the cookie sent too early gets the same page.
			again := jsonBody(t, tr.get(&visitor{cookie: v.cookie}, "application/json"))
			assert.Equal(t, got["lotteryIdentity"], again["lotteryIdentity"])
		})
	}
}
