package browser

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// challengeSite is a room with room to spare that challenges everyone with
// the default proof of work and parks whoever fails it. With host "" the
// site is plain HTTP on 127.0.0.1; otherwise it is HTTPS, reached as host.
func challengeSite(t *testing.T, host string) *site {
	t.Helper()
	room, err := waitingroom.New(waitingroom.Config{
		Name: roomName,
		Settings: waitingroom.Settings{
			TotalActiveUsers:  100,
			NewUsersPerMinute: 100,
			Challenge: &challenge.Policy{
				Kind:   challenge.PoW,
				Who:    challenge.Everyone,
				OnFail: challenge.Infinite,
			},
		},
		Keys:            [][]byte{testKey},
		RefreshInterval: time.Second,
		RefreshJitter:   -1,
		SyncInterval:    -1,
		Cookie:          waitingroom.CookieOptions{Secure: host != ""},
		Logger:          slog.New(slog.DiscardHandler),
	}, memstore.New())
	require.NoError(t, err)
	t.Cleanup(func() { _ = room.Close() })
	require.NoError(t, room.Sync(context.Background()))
	s := &site{room: room}
	guarded := room.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("X-App", "1")
		_, _ = io.WriteString(w, appPage)
	}))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		guarded.ServeHTTP(w, r)
		s.record(r, w.Header().Get("X-App") != "")
	})
	if host == "" {
		s.srv = httptest.NewServer(h)
		s.url = s.srv.URL + "/"
	} else {
		s.srv = httptest.NewTLSServer(h)
		s.url = strings.Replace(s.srv.URL, "127.0.0.1", host, 1) + "/"
	}
	t.Cleanup(s.srv.Close)
	return s
}

// The default page solves the proof of work (default difficulty) in a Web
// Worker and reaches the application (how long it took is logged, not
// held: about a second on a quiet machine, over 2 on a busy one); a browser without JavaScript never answers and stays in the
// infinite queue, however often its page refreshes, though the room has
// room.
func TestChallengeInBrowser(t *testing.T) {
	t.Run("JavaScript on: solved in a worker", func(t *testing.T) {
		ctx := newBrowser(t, allowThirdParty)
		s := challengeSite(t, "")
		start := time.Now()
		navigate(t, ctx, s.url)
		html := waitPage(t, ctx, appHeading)
		took := time.Since(start)
		t.Logf("from the first request to the application: %v", took.Round(time.Millisecond))
		assert.Contains(t, html, `<span id="js">on</span>`)
		k := s.room.Stats().Counters
		assert.Equal(t, uint64(1), k.ChallengesIssued)
		assert.Equal(t, uint64(1), k.ChallengesPassed)
		assert.Zero(t, k.ChallengesFailed)
		// The worker did it: the page before held the worker's script.
		assert.Equal(t, 1, s.count(func(h hit) bool { return !h.app }), "one waiting page: %+v", s.snapshot())
	})
	t.Run("JavaScript off: the infinite queue", func(t *testing.T) {
		ctx := newBrowser(t, allowThirdParty)
		s := challengeSite(t, "")
		_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		require.NoError(t, err)
		navigate(t, ctx, s.url)
		// The page says that it needs JavaScript, in the same page every
		// visitor given the challenge gets.
		waitPage(t, ctx, "Turn on JavaScript: without it, this page may never let you in.")
		// The <noscript> refresh keeps coming back, every time parked.
		s.waitHits(t, 4, "refreshes of the waiting page with the cookie", waitingWithCookie)
		assert.Zero(t, s.count(func(h hit) bool { return h.app }), "never let in: %+v", s.snapshot())
		k := s.room.Stats().Counters
		assert.Equal(t, uint64(1), k.ChallengesFailed)
		assert.Equal(t, uint64(1), k.ChallengesParked)
		assert.Zero(t, k.ChallengesPassed)
	})
}
