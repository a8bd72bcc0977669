package template

import (
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
)

var (
	statusRE   = regexp.MustCompile(`(?s)<div class="status" id="wr-status"[^>]*>\n(.*?)</div>`)
	linesRE    = regexp.MustCompile(`(?s)<template data-wr-lines="wr-status">\n(.*?)</template>`)
	lineRE     = regexp.MustCompile(`<p( class="wait")? data-wr-if="([^"]*)">(.*)</p>`)
	shownRE    = regexp.MustCompile(`<p( class="wait")?>(.*)</p>`)
	slotRE     = regexp.MustCompile(`<strong data-wr-text="([^"]*)"></strong>`)
	toggledRE  = regexp.MustCompile(`<p data-wr-if="([^"]*)"( hidden)?>`)
	liveMarkup = regexp.MustCompile(`<script data-refresh="(\d+)" data-cookie="([^"]*)">`)
)

// holds is the live script's data-wr-if on v, the page's JSON.
func holds(cond string, v map[string]any) bool {
	truthy := func(k string) bool {
		switch x := v[k].(type) {
		case bool:
			return x
		case float64:
			return x != 0
		case string:
			return x != ""
		}
		return false
	}
	for _, k := range strings.Fields(cond) {
		if neg, ok := strings.CutPrefix(k, "!"); ok {
			if truthy(neg) {
				return false
			}
		} else if !truthy(k) {
			return false
		}
	}
	return true
}

// The live page's lines, filled from the JSON as its script fills them,
// are the lines the page shows without JavaScript, in every language and
// state: the page updated in place reads as the page reloaded would.
func TestLiveLinesMatchPage(t *testing.T) {
	for _, lang := range Languages() {
		for _, st := range pageStates {
			t.Run(lang+"/"+st.name, func(t *testing.T) {
				d := st.data(lang)
				page := render(t, Default(), d, lang)
				b, err := json.Marshal(d)
				require.NoError(t, err)
				var v map[string]any
				require.NoError(t, json.Unmarshal(b, &v))

				if d.IsRejectQueue {
					assert.Contains(t, page, `<script data-refresh="0"`, "the closed page does not update itself")
					return
				}
				var want []string
				for _, m := range shownRE.FindAllStringSubmatch(statusRE.FindStringSubmatch(page)[1], -1) {
					want = append(want, m[1]+m[2])
				}
				require.NotEmpty(t, want)
				var got []string
				for _, m := range lineRE.FindAllStringSubmatch(linesRE.FindStringSubmatch(page)[1], -1) {
					if !holds(m[2], v) {
						continue
					}
					got = append(got, m[1]+slotRE.ReplaceAllStringFunc(m[3], func(s string) string {
						name := slotRE.FindStringSubmatch(s)[1]
						val, _ := json.Marshal(v[name])
						text := strings.Trim(string(val), `"`)
						return "<strong>" + html.EscapeString(text) + "</strong>"
					}))
				}
				assert.Equal(t, want, got)

				// The paragraphs it shows and hides are as rendered.
				toggled := toggledRE.FindAllStringSubmatch(linesRE.ReplaceAllString(page, ""), -1)
				require.Len(t, toggled, 2)
				for _, m := range toggled {
					assert.Equal(t, !holds(m[1], v), m[2] != "", "%s", m[0])
				}
			})
		}
	}
}

func TestLiveScript(t *testing.T) {
	d := fifoData()
	d.CookieAttributes = `; Path=/"><x; Secure; SameSite=None; Partitioned`
	page := render(t, Default(), d, "en")
	m := liveMarkup.FindStringSubmatch(page)
	require.NotNil(t, m)
	assert.Equal(t, "20", m[1])
	assert.Equal(t, d.CookieAttributes, html.UnescapeString(m[2]))
	assert.Equal(t, 1, strings.Count(page, "</script>"))
	// The script comes after the page it updates, and before the
	// challenge's, which tells it when its answer is in the cookie.
	d.ChallengeWidget = ChallengeScriptFor("p.1.8", "", "c", d.CookieAttributes, 20)
	page = render(t, Default(), d, "en")
	assert.Less(t, strings.Index(page, "</main>"), strings.Index(page, "<script data-refresh"))
	assert.Less(t, strings.Index(page, "<script data-refresh"), strings.Index(page, "window.wrAnswered=false"))

	// The framed visitor's notice and its link, hidden until the script
	// finds the cookie lost.
	assert.Contains(t, page, `<p class="notice" data-wr-framed hidden>Your browser does not let this waiting room keep your place while it is shown inside another site. <a href="" target="_blank" rel="noopener" data-wr-self>Open the waiting room in its own tab</a></p>`)
}

// A visitor without JavaScript reads, where the page gives a challenge,
// that it needs JavaScript; every visitor given the challenge gets the
// same page, parked or not.
func TestDefaultNeedsJavaScript(t *testing.T) {
	for _, lang := range Languages() {
		texts := lookupLang(lang).textsFor(20)
		notice := "<noscript><p class=\"notice\">" + html.EscapeString(texts[internalPrefix+"needsJS"]) + "</p></noscript>"
		with := render(t, Default(), with(fifoData(), func(d *Data) { d.Challenge, d.ChallengePuzzle = "pow", "p.1.8" }), lang)
		assert.Contains(t, with, notice, lang)
		assert.Less(t, strings.Index(with, "<h1>"), strings.Index(with, notice), "first thing under the heading")
		without := render(t, Default(), fifoData(), lang)
		assert.NotContains(t, without, "<noscript>", lang)
	}
}

// The live page's script parses (node --check; skipped without node unless
// the services are required; the browser tests run it in Chromium).
func TestLiveScriptParses(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		servicetest.Unavailable(t, servicetest.Program("node", "to check the live page's script"), err)
	}
	f := filepath.Join(t.TempDir(), "live.js")
	require.NoError(t, os.WriteFile(f, []byte(liveJS), 0o600))
	out, err := exec.Command(node, "--check", f).CombinedOutput()
	require.NoError(t, err, string(out))
}
