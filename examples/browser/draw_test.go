package browser

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/admin"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/go-waitingroom/waitingroom/template"
)

// Where admission is a draw (random queueing, or a shuffle), the
// waiting page has a closed section a visitor opens to note what checks
// the draw: their identity in it, the commitment to the hour's seed, the
// interval in progress and its odds, as the page's JSON gives them, and a
// link to the published record of the period, which answers it, on a
// phone's width without overflowing.
func TestDrawSection(t *testing.T) {
	clk := &virtualClock{t: time.Date(2026, 3, 14, 12, 0, 30, 0, time.UTC)}
	st, bg := memstore.New(), context.Background()
	rooms := make([]*waitingroom.Room, 2)
	for i := range rooms {
		room, err := waitingroom.New(waitingroom.Config{
			Name:          "draw",
			Settings:      waitingroom.Settings{TotalActiveUsers: 1000, NewUsersPerMinute: 1, QueueingMethod: waitingroom.Random},
			Keys:          [][]byte{testKey},
			RefreshJitter: -1,
			SyncInterval:  -1,
			Now:           clk.Now,
			Logger:        slog.New(slog.DiscardHandler),
			Page:          template.Options{LotteryRecords: "/lottery"},
		}, st)
		require.NoError(t, err)
		t.Cleanup(func() { _ = room.Close() })
		rooms[i] = room
	}
	// An hour on, the hour in progress has a committed seed, and each
	// instance knows of the other.
	for _, rm := range rooms {
		require.NoError(t, rm.Sync(bg))
	}
	clk.Add(time.Hour)
	for range 2 {
		for _, rm := range rooms {
			require.NoError(t, rm.Sync(bg))
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/lottery", admin.Records(rooms[0])) // outside the room, as an operator mounts it
	mux.Handle("/", rooms[0].Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, appPage)
	})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL) // takes the minute's one admission
	require.NoError(t, err)
	_ = resp.Body.Close()

	ctx := newBrowser(t, allowThirdParty)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(360, 740)))
	navigate(t, ctx, srv.URL)
	waitPage(t, ctx, waitingHeading)
	assert.Equal(t, "Check the draw", eval[string](t, ctx, `document.querySelector("details.draw summary").textContent`))
	assert.False(t, eval[bool](t, ctx, `document.querySelector("details.draw").open`), "closed until opened")
	assert.False(t, eval[bool](t, ctx, `document.querySelector("details.draw dl").checkVisibility()`), "its values hidden")

	eval[bool](t, ctx, `document.querySelector("details.draw summary").click(), true`)
	waitTrue(t, ctx, `document.querySelector("details.draw").open`)
	shown := eval[[]string](t, ctx, `[...document.querySelectorAll("details.draw dd code")].filter(e => e.checkVisibility()).map(e => e.textContent)`)
	c, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	fromJSON, err := chromedp.Run(c, chromedp.Evaluate[map[string]map[string]any](
		`fetch(location.href, {headers: {Accept: "application/json"}}).then(r => r.json())`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	var v map[string]any
	for _, x := range fromJSON {
		v = x
	}
	require.NotNil(t, v)
	require.Len(t, shown, 4, "identity, commitment, the interval and its odds: %v", shown)
	assert.Equal(t, v["lotteryIdentity"], shown[0])
	assert.Equal(t, v["lotteryCommitment"], shown[1])
	assert.Regexp(t, `^[0-9a-f]{16}$`, shown[0])
	assert.Regexp(t, `^[0-9a-f]{64}$`, shown[1])
	odds, _ := v["lotteryOdds"].(float64) // 0 where the JSON omits it
	assert.Equal(t, []any{v["lotteryInterval"], odds}, []any{parseFloat(t, shown[2]), parseFloat(t, shown[3])}, "the JSON's numbers")
	assert.True(t, eval[bool](t, ctx, `(() => { const m = document.querySelector("main").getBoundingClientRect(), c = document.querySelectorAll("details.draw dd code")[1].getBoundingClientRect(); return c.height > 0 && c.left >= m.left && c.right <= m.right })()`),
		"the commitment wraps within the page")
	assert.Zero(t, eval[float64](t, ctx, `document.documentElement.scrollWidth - document.documentElement.clientWidth`), "no sideways scroll")

	link := eval[string](t, ctx, `(() => { const a = document.querySelector("details.draw dd a"); return a && a.checkVisibility() ? a.href : "" })()`)
	require.NotEmpty(t, link, "the record's link shown")
	assert.Equal(t, srv.URL+v["lotteryRecords"].(string), link)
	c2, cancel2 := context.WithTimeout(ctx, patience)
	defer cancel2()
	record, err := chromedp.Run(c2, chromedp.Evaluate[map[string]any](
		`fetch(document.querySelector("details.draw dd a").href).then(r => r.json())`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	assert.Equal(t, v["lotteryCommitment"], record["commitment"], "the link answers the record of the commitment shown")
	assert.Zero(t, eval[float64](t, ctx, `document.documentElement.scrollWidth - document.documentElement.clientWidth`), "no sideways scroll with the link")
}

func parseFloat(t *testing.T, s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err, s)
	return f
}
