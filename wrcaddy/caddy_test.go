package wrcaddy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/servicetest"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// caddyBinary builds Caddy with this module (cmd/caddy) once per run.
func caddyBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "wrcaddy-"); buildErr != nil {
			return
		}
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		}
		buildBin = filepath.Join(buildDir, "caddy")
		out, err := exec.Command(goTool, "build", "-o", buildBin, "github.com/go-waitingroom/waitingroom/wrcaddy/cmd/caddy").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/caddy: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return buildBin
}

// serveCaddy runs the Caddy binary with a site on a free loopback port
// whose handlers are site, returning the site's base URL.
func serveCaddy(t *testing.T, site string) string {
	t.Helper()
	bin := caddyBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	dir := t.TempDir()
	conf := "{\n\tadmin off\n\tauto_https off\n}\n\nhttp://" + addr + " {\n" + site + "\n}\n"
	path := filepath.Join(dir, "Caddyfile")
	require.NoError(t, os.WriteFile(path, []byte(conf), 0o644))
	var out strings.Builder
	var mu sync.Mutex
	cmd := exec.Command(bin, "run", "--config", path, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	cmd.Stdout, cmd.Stderr = w, w
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			mu.Lock()
			t.Logf("caddy's output:\n%s", out.String())
			mu.Unlock()
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-exited:
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("caddy exited: %s", out.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.Close()
			return "http://" + addr
		}
		require.True(t, time.Now().Before(deadline), "caddy did not start")
		time.Sleep(30 * time.Millisecond)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// site is a Caddyfile site of a room of one slot in front of a respond
// handler that shows the ticket header it gets.
func site(store string) string {
	return `	waitingroom {
		total_active_users 1
		new_users_per_minute 1
		key ` + hexKey + `
		store ` + store + `
		sync_interval 100ms
		bypass /static/
	}
	respond "app {http.request.header.Waiting-Room-Ticket}"`
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/html")
	req.Header.Set(waitingroom.TicketHeader, "forged")
	resp, err := c.Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	return resp, string(b)
}

func newClient(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, Timeout: 10 * time.Second}
}

// Caddy built with the module serves the room from a Caddyfile: the first
// visitor reaches the next handler with the ticket, the next waits on the
// page, bypass paths pass; with Redis, two Caddy processes share the
// room's limits.
func TestCaddyBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Caddy; skipped with -short")
	}
	redisURL := servicetest.Redis.URL()
	stores := []struct{ name, store string }{
		{"memory", "memory"},
		{"redis", redisURL},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			instances := 1
			store := st.store
			if st.name == "redis" {
				opts, err := redis.ParseURL(redisURL)
				require.NoError(t, err)
				c := redis.NewClient(opts)
				err = c.Ping(context.Background()).Err()
				_ = c.Close()
				if err != nil {
					servicetest.Unavailable(t, servicetest.Redis, err)
				}
				instances = 2
			}
			prefix := randomPrefix()
			var bases []string
			for range instances {
				s := site(store)
				if st.name == "redis" {
					s = strings.Replace(s, "\t\tsync_interval", "\t\tstore_prefix "+prefix+"\n\t\tsync_interval", 1)
				}
				bases = append(bases, serveCaddy(t, s))
			}
			first, second := newClient(t), newClient(t)
			resp, body := get(t, first, bases[0]+"/")
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			tk, ok := waitingroom.ParseTicket(strings.TrimPrefix(body, "app "))
			require.True(t, ok, "the ticket reaches the next handler: %q", body)
			assert.NotZero(t, tk.ID)

			last := bases[len(bases)-1]
			time.Sleep(300 * time.Millisecond) // a few syncs: the other instance knows the slot is taken
			resp, body = get(t, second, last+"/")
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.NotEmpty(t, resp.Header.Get("Refresh"), "the waiting page")
			assert.Contains(t, body, "<html")
			assert.NotContains(t, body, "app ")

			resp, body = get(t, first, last+"/")
			assert.True(t, strings.HasPrefix(body, "app id="), "the admitted visitor passes on every instance: %q", body)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			_, body = get(t, second, last+"/static/app.css")
			assert.Equal(t, "app bypassed", body)
		})
	}
}
