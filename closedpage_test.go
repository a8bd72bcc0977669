package waitingroom_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/go-waitingroom/waitingroom/template"
)

// The closed page (QueueingMethod Reject) gives refreshIntervalSeconds as
// the room's refresh interval: a template that reloads itself after it,
// as templates written for the product do, does not reload in a loop. The
// default closed page does not reload, nor does the response ask to.
func TestClosedPageRefreshInterval(t *testing.T) {
	const product = `<html><head>` +
		`<meta http-equiv="refresh" content="{{refreshIntervalSeconds}}">` +
		`</head><body>{{#isRejectQueue}}closed{{/isRejectQueue}}</body></html>`
	for _, tc := range []struct {
		name     string
		template string
		refresh  time.Duration
		wantMeta string // "" for no meta refresh
	}{
		{"product template", product, 0, `content="20"`},
		{"product template, 45 s", product, 45 * time.Second, `content="45"`},
		{"product template, 1.5 s", product, 1500 * time.Millisecond, `content="2"`},
		{"default page", "", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := waitingroom.ParseKeys(strings.Repeat("ab", 32))
			require.NoError(t, err)
			room, err := waitingroom.New(waitingroom.Config{
				Name: "closed",
				Settings: waitingroom.Settings{
					TotalActiveUsers: 10, NewUsersPerMinute: 10,
					QueueingMethod: waitingroom.Reject,
					Template:       tc.template,
				},
				RefreshInterval: tc.refresh,
				Keys:            keys,
			}, memstore.New())
			require.NoError(t, err)
			t.Cleanup(func() { _ = room.Close() })
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			require.NoError(t, room.Sync(ctx))
			h := room.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				t.Error("the closed room let a visitor in")
			}))

			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
			body := w.Body.String()
			assert.Empty(t, w.Header().Get("Refresh"), "the closed page is not reloaded by the response")
			if tc.wantMeta == "" {
				assert.NotContains(t, body, `http-equiv="refresh"`)
			} else {
				assert.Contains(t, body, tc.wantMeta)
				assert.Contains(t, body, "closed")
			}
			assert.NotContains(t, body, `content="0"`, "no reload loop")

			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header.Set("Accept", "application/json")
			w = httptest.NewRecorder()
			h.ServeHTTP(w, r)
			var got map[string]map[string]any
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &got), w.Body.String())
			for _, v := range got {
				assert.Equal(t, true, v["isRejectQueue"])
				want := max(1, (tc.refresh.Milliseconds()+999)/1000)
				if tc.refresh == 0 {
					want = 20
				}
				assert.Equal(t, float64(want), v["refreshIntervalSeconds"], "a JSON client waits as long")
			}
		})
	}
}

// A template set in the Config that uses a name no page fills is refused
// by New, naming it and the closest variable.
func TestNewRefusesUnknownTemplateVariable(t *testing.T) {
	keys, err := waitingroom.ParseKeys(strings.Repeat("ab", 32))
	require.NoError(t, err)
	_, err = waitingroom.New(waitingroom.Config{
		Name:     "typo",
		Settings: waitingroom.Settings{TotalActiveUsers: 10, NewUsersPerMinute: 10, Template: "<p>{{waitTimeMinutes}}</p>"},
		Keys:     keys,
	}, memstore.New())
	require.ErrorIs(t, err, waitingroom.ErrInvalidConfig)
	require.ErrorIs(t, err, template.ErrUnknownVariable)
	assert.Contains(t, err.Error(), "{{waitTimeMinutes}} on line 1 (did you mean waitTime?)")
}
