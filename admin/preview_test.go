package admin_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/admin"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/go-waitingroom/waitingroom/template"
)

// Preview renders every state a visitor can see, from the live template
// or another, and leaves the room as it was.
func TestPreview(t *testing.T) {
	f := newAdminFixture(t, newAdminClock(), memstore.New(), func(c *waitingroom.Config) {
		c.RefreshJitter = -1
		c.Template = `<p>{{queueingMethod}}|{{#queueAll}}all{{/queueAll}}|{{#isEventPrequeueing}}pre {{timeUntilEventStart}}{{/isEventPrequeueing}}|` +
			`{{#isRejectQueue}}closed{{/isRejectQueue}}|{{#waitTimeKnown}}{{waitTime}}{{/waitTimeKnown}}{{^waitTimeKnown}}unknown{{/waitTimeKnown}}|{{refreshIntervalSeconds}}</p>`
	})
	f.sync()
	var v string
	require.True(t, f.visit(&v))
	stats, counters := f.room.Stats(), f.room.Stats().Counters

	pages := admin.Preview(f.room, nil, "")
	require.Len(t, pages, len(admin.PreviewStates()))
	want := map[admin.PreviewState]string{
		admin.PreviewQueueing:      "<p>fifo||||12|20</p>",
		admin.PreviewQueueAll:      "<p>fifo|all|||unknown|20</p>",
		admin.PreviewEventPrequeue: "<p>fifo||pre 15||unknown|20</p>",
		admin.PreviewReject:        "<p>reject|||closed|unknown|20</p>",
		admin.PreviewUnknownWait:   "<p>fifo||||unknown|20</p>",
	}
	for i, p := range pages {
		assert.Equal(t, admin.PreviewStates()[i], p.State)
		assert.Equal(t, want[p.State], p.HTML, p.State)
		assert.Empty(t, p.Error)
		assert.Equal(t, http.StatusOK, p.Status)
	}
	// The queueing page shows a place in line, as a waiting visitor's does.
	assert.Equal(t, [2]int{36, 120}, [2]int{pages[0].Data.PositionInLine, pages[0].Data.QueueLength})
	assert.True(t, pages[2].Data.IsEventActive, "the pre-queue is part of the event")
	assert.True(t, pages[2].Data.ShuffleAtEventStart)

	assert.Equal(t, stats, f.room.Stats(), "the room is as it was")
	assert.Equal(t, counters, f.room.Stats().Counters)

	// The live settings show: random queueing, the status code, a
	// template changed live; another template and language on request.
	require.NoError(t, f.room.Update(t.Context(), func(s *waitingroom.Settings) {
		s.QueueingMethod, s.QueueingStatusCode, s.Template = waitingroom.Random, http.StatusTooManyRequests, "<b>{{waitTimeFormatted}}</b>"
	}))
	pages = admin.Preview(f.room, nil, "")
	assert.Equal(t, "<b>5 minutes to 15 minutes</b>", pages[0].HTML)
	assert.Equal(t, http.StatusTooManyRequests, pages[0].Status)
	other, err := template.Parse("<i>{{waitTimeFormatted}}</i>")
	require.NoError(t, err)
	assert.Equal(t, "<i>od 5 minut do 15 minut</i>", admin.Preview(f.room, other, "pl")[0].HTML)
	for _, p := range admin.Preview(f.room, template.Default(), "de") {
		assert.Contains(t, p.HTML, `<html lang="de"`, p.State)
	}
	assert.Equal(t, waitingroom.Random, f.room.Stats().Settings.QueueingMethod)
	f.clk.Add(time.Second)
	f.sync()
	assert.True(t, f.visit(&v), "the admitted visitor is still in")
}

// A live template that an instance of another release wrote into the
// shared settings may use names this release does not fill: the room
// renders them empty and warns when it loads the template, and the
// preview lists them the same way.
func TestPreviewListsUnknownNames(t *testing.T) {
	st := memstore.New()
	f := newAdminFixture(t, newAdminClock(), st, nil)
	f.sync()
	const src = "<p>{{waitTimeFormatted}}</p>\n<p>{{waitTimeMinutes}} {{#isFifoQueue}}in line{{/isFifoQueue}} {{waitTimeMinutes}}</p>"
	f.setLiveTemplate(st, src)

	want := []string{
		"{{waitTimeMinutes}} on line 2 (did you mean waitTime?)",
		"{{#isFifoQueue}} on line 2 (did you mean isFIFOQueue?)",
	}
	for _, p := range admin.Preview(f.room, nil, "") {
		assert.Equal(t, want, p.Unknown, p.State)
		assert.Empty(t, p.Error, p.State)
	}

	tests := []struct {
		name, method, path, body string
		want                     []string
	}{
		{name: "the live template", method: http.MethodGet, path: "/preview", want: []string{
			"waitingroom: a template in the settings uses a variable no page fills; it renders empty: " + want[0],
			"waitingroom: a template in the settings uses a variable no page fills; it renders empty: " + want[1],
		}},
		{name: "the live template, in another language", method: http.MethodGet, path: "/preview?lang=fr", want: []string{
			"waitingroom: a template in the settings uses a variable no page fills; it renders empty: " + want[0],
			"waitingroom: a template in the settings uses a variable no page fills; it renders empty: " + want[1],
		}},
		{name: "a template posted", method: http.MethodPost, path: "/preview", body: `{"template":"<i>{{queueingMethod}}</i>"}`},
		{name: "the default page posted", method: http.MethodPost, path: "/preview", body: `{"template":""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := f.do(tt.method, tt.path, tt.body)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			var body struct {
				Warnings []string `json:"warnings"`
				States   []struct {
					Unknown []string `json:"unknown"`
				} `json:"states"`
			}
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
			require.Len(t, body.States, len(admin.PreviewStates()))
			if tt.want == nil {
				// Listed, empty: a client finds the members the guide names.
				assert.Contains(t, w.Body.String(), `"warnings":[]`)
				assert.Equal(t, len(body.States), strings.Count(w.Body.String(), `"unknown":[]`))
				tt.want = []string{}
			}
			assert.Equal(t, tt.want, body.Warnings)
			for _, s := range body.States {
				if len(tt.want) == 0 {
					assert.Empty(t, s.Unknown)
				} else {
					assert.Equal(t, want, s.Unknown)
				}
			}
		})
	}
}

// setLiveTemplate writes src into the shared settings as an instance of
// another release would, without the checks of Room.Update, and syncs.
func (f *adminFixture) setLiveTemplate(st store.Store, src string) {
	t := f.t
	t.Helper()
	require.NoError(t, st.Update(t.Context(), "launch", func(s *store.State) error {
		var settings map[string]any
		require.NoError(t, json.Unmarshal(s.Settings, &settings))
		settings["template"] = src
		b, err := json.Marshal(settings)
		require.NoError(t, err)
		s.Settings = b
		s.SettingsVersion++
		return nil
	}))
	f.sync()
	require.Equal(t, src, f.room.Stats().Settings.Template, "the room runs the other release's template")
}

// A browser that opens /preview gets a page of every state, each framed
// from /preview?state=, under a list of the names the live template uses
// that no page fills, escaped; with none, no list. API clients keep
// getting JSON.
func TestPreviewPageShowsWarnings(t *testing.T) {
	const browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	tests := []struct {
		name, template, path string
		want                 []string // the items of the list, as the page has them
		frames               []string // a frame's src, escaped
	}{
		{
			name:     "unknown names, escaped",
			template: "<p>{{waitTimeMinutes}}</p>\n<p>{{a<b>&\"c}}</p>\n{{#isFifoQueue}}x{{/isFifoQueue}}",
			path:     "/preview",
			want: []string{
				"<li><code>{{waitTimeMinutes}} on line 1 (did you mean waitTime?)</code></li>",
				"<li><code>{{a&lt;b&gt;&amp;&#34;c}} on line 2</code></li>",
				"<li><code>{{#isFifoQueue}} on line 3 (did you mean isFIFOQueue?)</code></li>",
			},
			frames: []string{`src="preview?state=queueing"`, `src="preview?state=unknownWait"`},
		},
		{
			name:     "one unknown name, another language",
			template: "<p>{{waitTimeMinutes}}</p>",
			path:     "/preview?lang=fr",
			want:     []string{"<li><code>{{waitTimeMinutes}} on line 1 (did you mean waitTime?)</code></li>"},
			frames:   []string{`src="preview?lang=fr&amp;state=reject"`},
		},
		{
			name:     "every name known",
			template: "<p>{{waitTimeFormatted}}</p>",
			path:     "/preview",
			frames:   []string{`src="preview?state=queueAll"`},
		},
		{
			name:   "the default page",
			path:   "/preview",
			frames: []string{`src="preview?state=eventPrequeue"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := memstore.New()
			f := newAdminFixture(t, newAdminClock(), st, nil)
			f.sync()
			if tt.template != "" {
				f.setLiveTemplate(st, tt.template)
			}

			w := f.do(http.MethodGet, tt.path, "", "Accept", browser)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
			csp := w.Header().Get("Content-Security-Policy")
			assert.Contains(t, csp, "frame-src 'self'")
			assert.Contains(t, csp, "frame-ancestors 'none'")
			assert.NotContains(t, csp, "script-src", "the page runs no script")
			assert.Equal(t, "Accept", w.Header().Get("Vary"))
			page := w.Body.String()
			for _, s := range admin.PreviewStates() {
				assert.Contains(t, page, `id="state-`+string(s)+`"`)
			}
			for _, src := range tt.frames {
				assert.Contains(t, page, `<iframe sandbox="allow-scripts" referrerpolicy="no-referrer" `+src)
			}

			if tt.want == nil {
				assert.NotContains(t, page, `id="warnings"`)
				assert.NotContains(t, page, "no page fills")
			} else {
				start := strings.Index(page, `<section id="warnings" class="warn" role="alert"`)
				require.GreaterOrEqual(t, start, 0, page)
				end := start + strings.Index(page[start:], "</section>")
				assert.Less(t, end, strings.Index(page, `id="state-queueing"`), "the list is above the previews")
				block := page[start:end]
				assert.Contains(t, block, fmt.Sprintf("The template uses %d variable", len(tt.want)))
				for _, item := range tt.want {
					assert.Contains(t, block, item)
				}
				assert.Equal(t, len(tt.want), strings.Count(block, "<li>"))
				assert.NotContains(t, page, "<b>", "nothing the template brings is unescaped")
			}

			// API clients get JSON, with the same warnings.
			for _, accept := range []string{"", "application/json", "*/*"} {
				w := f.do(http.MethodGet, tt.path, "", "Accept", accept)
				assert.Equal(t, "application/json", w.Header().Get("Content-Type"), accept)
				var body struct {
					Warnings []string `json:"warnings"`
				}
				require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
				assert.Len(t, body.Warnings, len(tt.want), accept)
			}
			// A posted template is previewed as JSON, even to a browser.
			w = f.do(http.MethodPost, tt.path, `{"template":""}`, "Accept", browser)
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
		})
	}
}
