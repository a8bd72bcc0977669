package admin_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

func TestAdminStatusPage(t *testing.T) {
	clk := newAdminClock()
	f := newAdminFixture(t, clk, memstore.New(), func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 7, 3
	})
	f.sync()
	cookies := make([]string, 5)
	for i := range cookies {
		f.visit(&cookies[i]) // 3 admitted, 2 waiting
	}
	clk.Add(30 * time.Second)
	f.sync()
	stats := f.room.Stats()
	require.Equal(t, 3, stats.Active)
	require.Equal(t, 2, stats.Waiting)

	w := f.do(http.MethodGet, "/", "")
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
	body := w.Body.String()

	for _, want := range []string{
		"<!DOCTYPE html>",
		`<span id="room">launch</span>`,
		`id="status" class="badge queueing">queueing<`,
		`id="queueingMethod">fifo<`,
		`<span id="active">3</span>`,
		`<span id="totalActiveUsers">7</span>`,
		`<dd id="waiting">2</dd>`,
		`<span id="admittedThisMinute">3</span>`,
		`<span id="newUsersPerMinute">3</span>`,
		`<dd id="outflowPerMinute">3.0</dd>`, // the limit, not 3 in 30 s read as 6 a minute
		`<dd id="estimatedWait">` + stats.Estimate.Formatted("") + `</dd>`,
		`<dd id="instances">1</dd>`,
		`<span id="challengesIssued">0</span>`,
		`<span id="challengesParked">0</span>`,
		`<span id="lastSync">2026-05-27T15:54:30Z</span>`,
		`id="chart"`,
		`get('history')`,
		`<div id="queue" class="hchart"`,
		`<p class="sub" id="queueSummary">2 waiting, arrived 15:54 to 15:54 UTC (1 minute).</p>`,
		`<p id="parked" class="warn mild" role="status" hidden></p>`,
		`<span id="challengesUnverified">0</span>`,
		`<span id="challengesDeferred">0</span>`,
	} {
		assert.Contains(t, body, want)
	}
	// Each series' legend shows its line and its mark, as the charts
	// draw them.
	for _, series := range []string{"active", "waiting", "admitted", "limit"} {
		assert.Contains(t, body, `<line class="s `+series+`"`, series)
		assert.Contains(t, body, `class="m `+series+`"`, series)
	}
	assert.NotContains(t, body, `id="signout"`, "a bearer token: nothing to sign out of")

	// Self-contained: no external URL, no fetched asset.
	assert.NotContains(t, body, "http://")
	assert.NotContains(t, body, "https://")
	assert.Empty(t, externalRef.FindAllString(body, -1))

	// The inline script and style run under a per-response nonce, and
	// nothing else does.
	csp := w.Header().Get("Content-Security-Policy")
	nonce := regexp.MustCompile(`script-src 'nonce-([A-Za-z0-9+/]+)'`).FindStringSubmatch(csp)
	require.Len(t, nonce, 2, csp)
	assert.Contains(t, csp, "default-src 'none'")
	assert.Contains(t, csp, "connect-src 'self'")
	assert.Contains(t, csp, "frame-ancestors 'none'")
	assert.Equal(t, 1, strings.Count(body, `<script nonce="`+nonce[1]+`">`))
	assert.Equal(t, 1, strings.Count(body, "<script"))
	assert.Equal(t, 1, strings.Count(body, `<style nonce="`+nonce[1]+`">`))
	again := f.do(http.MethodGet, "/", "")
	assert.NotEqual(t, csp, again.Header().Get("Content-Security-Policy"), "a fresh nonce per response")
}

// The page as served, before its script runs (and without it), gives the
// limits and method in force: an event's, not the room's settings'.
func TestAdminStatusPageEventInForce(t *testing.T) {
	clk := newAdminClock()
	start := clk.Now().Truncate(time.Minute)
	f := newAdminFixture(t, clk, memstore.New(), func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 7, 3
		c.Events = []waitingroom.Event{{Name: "drop", Start: start, End: start.Add(time.Hour),
			TotalActiveUsers: 5, NewUsersPerMinute: 2, QueueingMethod: waitingroom.Random}}
	})
	f.sync()
	body := f.do(http.MethodGet, "/", "").Body.String()
	for _, want := range []string{`id="queueingMethod">random<`, `<span id="totalActiveUsers">5</span>`, `<span id="newUsersPerMinute">2</span>`} {
		assert.Contains(t, body, want)
	}
}

func TestAdminStatusPageUnknownWait(t *testing.T) {
	f := newAdminFixture(t, newAdminClock(), memstore.New(), nil)
	w := f.do(http.MethodGet, "/", "")
	require.Equal(t, http.StatusOK, w.Code)
	assert.Contains(t, w.Body.String(), `<dd id="estimatedWait">unknown</dd>`)
	assert.Contains(t, w.Body.String(), `<span id="lastSync">never</span>`)
	assert.Contains(t, w.Body.String(), `class="badge not_queueing">not_queueing<`)
	assert.Contains(t, w.Body.String(), `<p class="sub" id="queueSummary">Nobody is waiting.</p>`)
}

// TestAdminStatusPageParked: a visitor parked by the challenge (OnFail
// infinite) shows in the counters and in a warning on the page.
func TestAdminStatusPageParked(t *testing.T) {
	clk := newAdminClock()
	f := newAdminFixture(t, clk, memstore.New(), func(c *waitingroom.Config) {
		c.TotalActiveUsers, c.NewUsersPerMinute = 1, 1
		c.Challenge = &challenge.Policy{Kind: challenge.PoW, OnFail: challenge.Infinite}
	})
	f.sync()
	first, second := "", ""
	require.True(t, f.visit(&first))
	require.False(t, f.visit(&second), "queued, given the puzzle")
	clk.Add(2 * time.Minute)
	f.sync()
	require.False(t, f.visit(&second), "back without an answer: parked")
	clk.Add(10 * time.Second)
	f.sync()

	st := f.getJSON("/status")
	counters := st["counters"].(map[string]any)
	assert.EqualValues(t, 1, counters["challengesFailed"])
	assert.EqualValues(t, 1, counters["challengesParked"])
	body := f.do(http.MethodGet, "/", "").Body.String()
	assert.Contains(t, body, `<p id="parked" class="warn mild" role="status">1 visitor parked by the challenge since this instance started`)
	assert.Contains(t, body, `<span id="challengesParked">1</span>`)
}
