package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// start runs the demo with args on a port of its own and returns its base
// URL; it stops, with status 0, when the test ends.
func start(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	ready, done := make(chan string, 1), make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, append([]string{"-listen", "127.0.0.1:0"}, args...), io.Discard, &stderr, ready)
	}()
	select {
	case addr := <-ready:
		t.Cleanup(func() {
			cancel()
			assert.Equal(t, 0, <-done, "a clean stop")
		})
		return "http://" + addr
	case code := <-done:
		t.Fatalf("exited with %d: %s", code, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("did not start")
	}
	return ""
}

func get(t *testing.T, c *http.Client, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// The README's demo: with room for three, three browsers are let in and
// pass again, the fourth waits on the page (in its own language), and
// /active counts the three.
func TestTheFourthBrowserWaits(t *testing.T) {
	base := start(t, "-total-active-users", "3", "-new-users-per-minute", "3")
	var in []*http.Client
	for range 3 {
		jar, err := cookiejar.New(nil)
		require.NoError(t, err)
		c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
		_, body := get(t, c, base+"/")
		require.Contains(t, body, "You're in")
		in = append(in, c)
	}
	resp, body := get(t, http.DefaultClient, base+"/", "Accept-Language", "fr")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.NotContains(t, body, "You're in")
	assert.Contains(t, body, `<html lang="fr"`)
	assert.NotEmpty(t, resp.Header.Get("Refresh"))
	for _, c := range in {
		_, body := get(t, c, base+"/")
		assert.Contains(t, body, "You're in", "an admitted browser passes again")
	}
	_, body = get(t, http.DefaultClient, base+"/active")
	assert.Equal(t, "3\n", body)
}

func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"-h", []string{"-h"}, 0, "Usage: demo [flags]", ""},
		{"unknown flag", []string{"-store", "redis://x"}, 2, "", "flag provided but not defined: -store"},
		{"extra argument", []string{"x"}, 2, "", `unexpected arguments ["x"]`},
		{"bad limits", []string{"-listen", "127.0.0.1:0", "-total-active-users", "1", "-new-users-per-minute", "2"}, 2, "", "NewUsersPerMinute"},
		{"bad address", []string{"-listen", "127.0.0.1:-1"}, 1, "", "demo: listen tcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, tc.code, run(t.Context(), tc.args, &stdout, &stderr, nil))
			assert.Contains(t, stdout.String(), tc.stdout)
			assert.Contains(t, stderr.String(), tc.stderr)
			if tc.code == 0 {
				assert.Empty(t, stderr.String())
			}
		})
	}
}

// The demo links none of the stores' drivers, the metrics or anything
// else of the proxy's that takes long to compile: its first build, on a
// machine that never built the project, must stay well within a minute.
func TestLinksNoHeavyPackage(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/go-waitingroom/waitingroom/cmd/waitingroom/internal/demoapp")
	for _, heavy := range []string{
		"modernc.org/", "github.com/jackc/", "github.com/go-sql-driver/", "database/sql",
		"github.com/redis/", "github.com/prometheus/", "google.golang.org/protobuf/",
		"github.com/go-waitingroom/waitingroom/store/sqlstore", "github.com/go-waitingroom/waitingroom/store/redisstore",
	} {
		for _, d := range deps {
			assert.False(t, strings.HasPrefix(d, heavy), "the demo links %s", d)
		}
	}
}

// The root README's set-up commands are two, the demo's first: this
// command, with flags it takes.
func TestREADME(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(b), "\n## Two commands\n")
	require.True(t, ok, "the README has a Two commands section")
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```\n").FindAllStringSubmatch(section, -1)
	require.Len(t, blocks, 2, "the demo and the tests")
	const prefix = "go run ./cmd/waitingroom/demo "
	cmd := strings.TrimSpace(blocks[0][1])
	require.True(t, strings.HasPrefix(cmd, prefix), "%q", cmd)
	var s settings
	fs := flags(&s)
	fs.SetOutput(io.Discard)
	require.NoError(t, fs.Parse(strings.Fields(strings.TrimPrefix(cmd, prefix))))
	assert.Equal(t, 3, s.total)
	assert.Equal(t, 3, s.perMinute)
}
