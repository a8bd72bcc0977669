package integration

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snippet is a Go code block of a Markdown file.
type snippet struct {
	file string // the Markdown file, relative to the repository's root
	line int    // the line of its opening fence
	code string
}

// goBlock is a fenced block of Go code.
var goBlock = regexp.MustCompile("(?ms)^```go\n(.*?)^```$")

// goSnippets returns the Go blocks of the Markdown file name, relative to
// the repository's root.
func goSnippets(t *testing.T, name string) []snippet {
	b, err := os.ReadFile(filepath.Join("..", name))
	require.NoError(t, err)
	src := string(b)
	var out []snippet
	for _, m := range goBlock.FindAllStringSubmatchIndex(src, -1) {
		out = append(out, snippet{
			file: name,
			line: strings.Count(src[:m[0]], "\n") + 1,
			code: src[m[2]:m[3]],
		})
	}
	return out
}

// storeWiring tells a snippet that builds a store or opens its database:
// the code a newcomer pastes first.
var storeWiring = regexp.MustCompile(`\b(memstore|redisstore|sqlstore)\.New\(|\bsql\.Open\(|\bredis\.New(Cluster|Failover)?Client\(`)

// sqlOpen finds the driver name of a sql.Open call.
var sqlOpen = regexp.MustCompile(`\bsql\.Open\("([^"]+)"`)

// drivers are the packages that register the database/sql drivers the
// snippets may open, by name.
var drivers = map[string]string{
	"pgx":    "github.com/jackc/pgx/v5/stdlib",
	"mysql":  "github.com/go-sql-driver/mysql",
	"sqlite": "modernc.org/sqlite",
}

// The Go snippets of the README compile as written: each is a whole
// program, its imports included (a database driver's blank import too),
// for every store it shows. So are the guide's whole programs, and any
// snippet of the guide that wires a store must be one. This module
// requires every store and driver, so a snippet builds here as in a
// newcomer's module. (The README's template variables are held to
// package template in the root's readme_test.go.)
func TestReadmeSnippetsCompile(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command in PATH")
	}
	var programs []snippet
	readme := goSnippets(t, "README.md")
	require.NotEmpty(t, readme)
	for _, s := range readme {
		if assert.True(t, strings.HasPrefix(s.code, "package main\n"), "%s:%d: a README snippet is a whole program, from package main and its imports", s.file, s.line) {
			programs = append(programs, s)
			formatted, err := format.Source([]byte(s.code))
			assert.True(t, err == nil && string(formatted) == s.code, "%s:%d: the snippet is gofmt'ed", s.file, s.line)
		}
	}
	for _, s := range goSnippets(t, "docs/guide.md") {
		switch {
		case strings.HasPrefix(s.code, "package main\n"):
			programs = append(programs, s)
		case storeWiring.MatchString(s.code):
			t.Errorf("%s:%d: a snippet that wires a store is a whole program, from package main and its imports", s.file, s.line)
		}
	}
	for _, want := range []string{`"github.com/go-waitingroom/waitingroom/store/memstore"`, `redis.NewClusterClient(`, `_ "github.com/jackc/pgx/v5/stdlib"`, `_ "github.com/go-sql-driver/mysql"`, `_ "modernc.org/sqlite"`} {
		assert.True(t, strings.Contains(joined(programs), want), "a whole program of the README shows %s", want)
	}

	// A driver is registered by a blank import, at run time: a program
	// without it compiles, and its sql.Open fails.
	for _, s := range programs {
		for _, m := range sqlOpen.FindAllStringSubmatch(s.code, -1) {
			imp, ok := drivers[m[1]]
			if assert.True(t, ok, "%s:%d: sql.Open(%q): a driver this test knows", s.file, s.line, m[1]) {
				assert.True(t, strings.Contains(s.code, "\t_ \""+imp+"\""), "%s:%d: sql.Open(%q) needs the driver's blank import, _ %q", s.file, s.line, m[1], imp)
			}
		}
	}

	// A directory of this module, named so that ./... never sees it,
	// with a package per snippet.
	dir, err := os.MkdirTemp(".", "_readme-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	for i, s := range programs {
		pkg := filepath.Join(dir, fmt.Sprintf("snippet%02d", i))
		require.NoError(t, os.MkdirAll(pkg, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(pkg, "main.go"), []byte(s.code), 0o644))
		t.Run(fmt.Sprintf("%s:%d", strings.ReplaceAll(s.file, "/", "_"), s.line), func(t *testing.T) {
			var out bytes.Buffer
			cmd := exec.Command(goTool, "vet", "./"+filepath.ToSlash(pkg))
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Errorf("%s:%d: the snippet does not compile as written: %v\n%s", s.file, s.line, err, out.String())
			}
		})
	}
}

func joined(ss []snippet) string {
	var b strings.Builder
	for _, s := range ss {
		b.WriteString(s.code)
	}
	return b.String()
}
