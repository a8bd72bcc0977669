package frontdoor

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the configurations shown in docs/forward-auth/*.md from their files")

// docsDir is docs/forward-auth, the pages and their configuration files.
var docsDir = filepath.Join("..", "..", "docs", "forward-auth")

// shownFile matches a configuration file shown on a page: the marker
// "<!-- file: PATH -->", PATH relative to docs/forward-auth, then a fenced
// block holding the file as it is.
var shownFile = regexp.MustCompile("(?s)<!-- file: ([^ ]+) -->\n(```[a-z]*\n)(.*?)```\n")

// docFile is the configuration file name of docs/forward-auth, as it is
// there.
func docFile(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(docsDir, filepath.FromSlash(name)))
	require.NoError(t, err)
	return string(b)
}

// TestPagesShowTheFiles: every configuration file of docs/forward-auth/
// (nginx/*.conf, caddy/Caddyfile) is shown on a page, and each page shows
// it as it is, so that what a reader copies from the page is what the
// tests run. go test -run TestPagesShowTheFiles -update rewrites the
// pages' blocks from the files.
func TestPagesShowTheFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(docsDir, "*", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	pages, err := filepath.Glob(filepath.Join(docsDir, "*.md"))
	require.NoError(t, err)
	var shown []string
	for _, page := range pages {
		b, err := os.ReadFile(page)
		require.NoError(t, err)
		doc := string(b)
		rewritten := shownFile.ReplaceAllStringFunc(doc, func(block string) string {
			m := shownFile.FindStringSubmatch(block)
			name, fence, content := m[1], m[2], m[3]
			shown = append(shown, name)
			file := docFile(t, name)
			if *update {
				return "<!-- file: " + name + " -->\n" + fence + file + "```\n"
			}
			assert.Equal(t, file, content, "%s shows %s as it is (go test -run TestPagesShowTheFiles -update)", filepath.Base(page), name)
			return block
		})
		if *update && rewritten != doc {
			require.NoError(t, os.WriteFile(page, []byte(rewritten), 0o644))
		}
	}
	for _, f := range files {
		rel, err := filepath.Rel(docsDir, f)
		require.NoError(t, err)
		assert.True(t, slices.Contains(shown, filepath.ToSlash(rel)), "no page of docs/forward-auth shows %s", rel)
	}
}

// fromDocs is the configuration file name of docs/forward-auth with only
// what its page says to change replaced (pairs of old and new, each old
// in the file): its addresses, and the pass secret's placeholder.
func fromDocs(t testing.TB, name string, pairs ...string) string {
	t.Helper()
	return replace(t, docFile(t, name), pairs...)
}
