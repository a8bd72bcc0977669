package waitingroom

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/template"
)

// The README's template section lists every template variable once, and
// nothing else as one.
func TestReadmeListsEveryTemplateVariable(t *testing.T) {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(b), "\n## Templates\n")
	require.True(t, ok, "the README has a Templates section")
	section, _, _ = strings.Cut(section, "\n## ")
	listed := map[string]int{}
	name := regexp.MustCompile("`([A-Za-z0-9]+)`")
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			listed[m[1]]++
		}
	}
	want := map[string]int{}
	ty := reflect.TypeFor[template.Data]()
	for i := range ty.NumField() {
		tag, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
		if tag != "-" { // not a variable of the JSON: ChallengeWidget, {{{turnstile}}}
			want[tag] = 1
		}
	}
	assert.Equal(t, want, listed)
}
