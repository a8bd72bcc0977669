package main

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/store/sqlstore"
)

var update = flag.Bool("update", false, "rewrite the usage in README.md from the flags")

// usageBlock opens the block of README.md that holds the output of
// waitingroom -h.
const usageBlock = "```text\n$ waitingroom -h\n"

// TestREADME keeps README.md true to the command: its usage block is what
// -h prints (go test -run TestREADME -update rewrites it), every flag is
// also explained outside that block, every `-flag` it names exists, and
// the SQL statements it shows are sqlstore.Schema's.
func TestREADME(t *testing.T) {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	readme := string(b)

	var usage strings.Builder
	writeUsage(&usage)
	start := strings.Index(readme, usageBlock)
	require.GreaterOrEqual(t, start, 0, "README.md has no block starting %q", usageBlock)
	start += len(usageBlock)
	n := strings.Index(readme[start:], "```\n")
	require.GreaterOrEqual(t, n, 0, "the usage block of README.md does not end")
	if *update && readme[start:start+n] != usage.String() {
		readme = readme[:start] + usage.String() + readme[start+n:]
		require.NoError(t, os.WriteFile("README.md", []byte(readme), 0o644))
		n = usage.Len()
	}
	assert.Equal(t, usage.String(), readme[start:start+n], "README.md's usage is not what waitingroom -h prints: go test -run TestREADME -update")

	fs := newFlagSet(&options{})
	prose := readme[:start] + readme[start+n:]
	fs.VisitAll(func(f *flag.Flag) {
		mentioned := regexp.MustCompile("`-" + regexp.QuoteMeta(f.Name) + "[` ]").MatchString(prose)
		assert.True(t, mentioned, "README.md explains -%s nowhere but in the usage", f.Name)
	})
	for _, m := range regexp.MustCompile("`-([a-z][a-z0-9-]*)").FindAllStringSubmatch(prose, -1) {
		if m[1] != "h" && m[1] != "help" {
			assert.NotNil(t, fs.Lookup(m[1]), "README.md names -%s, which is no flag", m[1])
		}
	}

	for _, d := range []sqlstore.Dialect{sqlstore.Postgres, sqlstore.MySQL} {
		assert.Contains(t, readme, sqlstore.Schema(d, ""), "README.md shows the statement of sqlstore.Schema for dialect %v", d)
	}
}
