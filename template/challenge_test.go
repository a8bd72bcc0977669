package template

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The challenge script carries its cookie, path and refresh; a puzzle
// runs the worker, a widget alone does not; nothing a value holds closes
// the script or breaks out of its strings.
func TestChallengeScript(t *testing.T) {
	s := ChallengeScript("seed.1.20", "", "room_challenge", "/shop", 20)
	assert.Contains(t, s, `c="room_challenge"`)
	assert.Contains(t, s, `Path=/shop`)
	assert.Contains(t, s, `r=20;`)
	assert.Contains(t, s, `new Worker(`)
	assert.Contains(t, s, `w.postMessage("seed.1.20")`)
	assert.True(t, strings.HasPrefix(s, "<script>"))
	assert.True(t, strings.HasSuffix(s, "</script>"))

	widget := `<div class="cf-turnstile" data-callback="wrChallengeDone"></div>`
	s = ChallengeScript("", widget, "c", "/", 5)
	assert.True(t, strings.HasPrefix(s, widget), "the widget first")
	assert.NotContains(t, s, "Worker", "no puzzle: no worker")
	assert.Contains(t, s, "window.wrChallengeDone=")

	s = ChallengeScript(`x</script><script>alert(1)`, "", `a"+alert(1)+"`, "/</script>", 1)
	assert.Equal(t, 1, strings.Count(s, "</script>"), "one end of the script, its own")
	assert.NotContains(t, s, `"+alert(1)+"`, "no way out of a string")
}
