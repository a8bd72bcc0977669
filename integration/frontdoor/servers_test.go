package frontdoor

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
)

// hexKey is the cookie key every room process of a test shares.
const hexKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// passSecret is the pass secret of the tests with passes.
const passSecret = "frontdoor-pass-secret-0123456789"

// adminToken is the rooms' admin token.
const adminToken = "frontdoor-admin-token-0123456789"

// The addresses of docs/forward-auth's configurations, which the tests
// replace with their own.
const (
	docListen     = "127.0.0.1:8080"
	docCaddy      = ":8080"
	docRoom       = "127.0.0.1:8081"
	docUpstream   = "127.0.0.1:3000"
	docCaddyAdmin = "localhost:2019"
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

// roomBinary builds cmd/waitingroom once per test run.
func roomBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "waitingroom-frontdoor-")
		if buildErr != nil {
			return
		}
		buildBin = filepath.Join(buildDir, "waitingroom")
		cmd := exec.Command(goTool(), "build", "-o", buildBin, "github.com/go-waitingroom/waitingroom/cmd/waitingroom")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/waitingroom: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return buildBin
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

// program returns the path of name on PATH (or in /usr/sbin, where
// Debian puts nginx), or stops the test.
func program(t testing.TB, name, what string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/" + name); serr == nil {
			return "/usr/sbin/" + name
		}
		servicetest.Unavailable(t, servicetest.Program(name, what), err)
	}
	return p
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// syncBuffer collects a running program's output.
type syncBuffer = servicetest.Buffer

// proc is a process a test started.
type proc struct {
	name   string
	addr   string // 127.0.0.1:port it serves on
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
}

// start runs bin with args, waits until ready answers, and stops the
// process at the end of the test (logging its output if the test failed).
func start(t testing.TB, name, addr string, ready func() error, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, addr: addr, out: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	require.NoError(t, p.cmd.Start())
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("output of %s:\n%s", p.name, p.out.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-p.exited:
			t.Fatalf("%s exited: %v\n%s", name, p.cmd.ProcessState, p.out.String())
		default:
		}
		err := ready()
		if err == nil {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not start: %v\n%s", name, err, p.out.String())
		}
		time.Sleep(30 * time.Millisecond)
	}
}

func (p *proc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// answers returns a ready function: a GET of url gets any HTTP answer.
func answers(url string) func() error {
	c := &http.Client{Timeout: time.Second}
	return func() error {
		resp, err := c.Get(url)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
}

// dials returns a ready function: addr accepts a TCP connection.
func dials(addr string) func() error {
	return func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// room starts a cmd/waitingroom -forward-auth process with args (and an
// admin address), returning its address and its admin address.
func room(t testing.TB, name string, args ...string) (addr, admin string) {
	t.Helper()
	bin := roomBinary(t)
	addr, admin = "127.0.0.1:"+freePort(t), "127.0.0.1:"+freePort(t)
	args = append([]string{"-forward-auth", "-listen", addr, "-admin-listen", admin, "-admin-token", adminToken,
		"-trusted-proxies", "127.0.0.1/32", "-key", hexKey}, args...)
	start(t, name, addr, answers("http://"+addr+"/healthz"), bin, args...)
	return addr, admin
}

// snippet returns the configuration marked <!-- tested: name --> in the
// pages of docs/forward-auth/, as it is there.
func snippet(t testing.TB, name string) string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "forward-auth", "*.md"))
	require.NoError(t, err)
	marker := "<!-- tested: " + name + " -->\n```"
	for _, page := range pages {
		b, err := os.ReadFile(page)
		require.NoError(t, err)
		doc := string(b)
		i := strings.Index(doc, marker)
		if i < 0 {
			continue
		}
		rest := doc[i+len(marker):]
		rest = rest[strings.Index(rest, "\n")+1:]
		end := strings.Index(rest, "```\n")
		require.GreaterOrEqual(t, end, 0)
		return rest[:end]
	}
	t.Fatalf("no page of docs/forward-auth has %q", marker)
	return ""
}

func replace(t testing.TB, s string, pairs ...string) string {
	t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		require.Contains(t, s, pairs[i])
		s = strings.ReplaceAll(s, pairs[i], pairs[i+1])
	}
	return s
}

// The configuration files of docs/forward-auth/nginx/, by variant.
var nginxFiles = map[string]string{
	"":      "nginx/nginx.conf",
	"cache": "nginx/cache.conf",
	"pass":  "nginx/pass.conf",
}

// nginx starts nginx with a configuration file of docs/forward-auth/nginx/
// (nginx.conf; with variant cache, cache.conf, which keeps the answers for
// admitted visitors; with pass, pass.conf, passes) in front of rooms and
// upstream, returning its address. The file runs as it is but for what
// its page says to change: the three addresses (the room's server line
// becomes one per room) and the pass secret.
func nginx(t testing.TB, variant string, upstream string, rooms ...string) string {
	t.Helper()
	bin := program(t, "nginx", "the forward-auth tests")
	file, ok := nginxFiles[variant]
	require.True(t, ok, "unknown nginx variant %q", variant)
	listen := "127.0.0.1:" + freePort(t)
	servers := make([]string, len(rooms))
	for i, r := range rooms {
		servers[i] = "server " + r + ";"
	}
	pairs := []string{
		"server " + docRoom + ";", strings.Join(servers, "\n        "),
		docListen, listen,
		docUpstream, upstream,
	}
	if variant == "pass" {
		pairs = append(pairs, "PASS_SECRET", passSecret)
	}
	return startNginx(t, bin, fromDocs(t, file, pairs...), listen)
}

// startNginx runs nginx with the configuration conf, which listens on
// listen, as docs/forward-auth/nginx.md says: in a prefix directory of its
// own (-p), where nginx writes every file. -g "daemon off;" keeps it in
// the foreground, as a service manager would. It returns listen once
// nginx accepts connections.
func startNginx(t testing.TB, bin, conf, listen string) string {
	t.Helper()
	// The prefix, in the temporary directory itself and readable by
	// all: nginx started as root runs its workers as nobody, who must
	// reach the cache and the temporary files nginx makes there.
	dir, err := os.MkdirTemp("", "frontdoor-nginx-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644))
	start(t, "nginx", listen, dials(listen), bin, "-p", dir, "-c", "nginx.conf", "-e", "stderr", "-g", "daemon off;")
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Logf("nginx error.log:\n%s", b)
		}
	})
	return listen
}

// The annotations' addresses in docs/forward-auth/ingress-nginx.md.
const docIngressRoom = "http://waitingroom.default.svc.cluster.local:8081"

// ingressNginx starts nginx as the ingress-nginx controller would
// configure it for docs/forward-auth/ingress-nginx.md's annotations, in
// front of room and upstream, returning its address. What the controller
// itself adds is the part of its template that matters here: the auth
// location, which sets X-Original-URL, X-Original-Method, X-Real-IP,
// X-Forwarded-For and X-Auth-Request-Redirect, clears X-Forwarded-Proto
// and passes the visitor's other headers on, and the location that asks
// it, copies the auth-response-headers and adds the auth answer's
// Set-Cookie. The snippets are the page's, verbatim.
func ingressNginx(t testing.TB, upstream, room string) string {
	t.Helper()
	bin := program(t, "nginx", "the forward-auth tests")
	a := annotations(t, replace(t, snippet(t, "ingress-nginx"), docIngressRoom, "http://"+room))
	require.Equal(t, "http://"+room+"/", a["auth-url"])
	require.Equal(t, "Waiting-Room-Ticket", a["auth-response-headers"])
	listen := "127.0.0.1:" + freePort(t)
	conf := fmt.Sprintf(`pid nginx.pid;
error_log error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path client_body_temp;
    proxy_temp_path proxy_temp;
    fastcgi_temp_path fastcgi_temp;
    uwsgi_temp_path uwsgi_temp;
    scgi_temp_path scgi_temp;
server {
    listen %[1]s;
%[2]s
    location = /_external-auth {
        internal;
        proxy_pass_request_body off;
        proxy_set_header Content-Length "";
        proxy_set_header X-Forwarded-Proto "";
        proxy_set_header X-Request-ID $request_id;
        proxy_set_header Host %[3]s;
        proxy_set_header X-Original-URL $scheme://$http_host$request_uri;
        proxy_set_header X-Original-Method $request_method;
        proxy_set_header X-Sent-From "nginx-ingress-controller";
        proxy_set_header X-Real-IP $remote_addr;
        proxy_set_header X-Forwarded-For $remote_addr;
        proxy_set_header X-Auth-Request-Redirect $request_uri;
        proxy_pass_request_headers on;
%[4]s
        proxy_http_version 1.1;
        proxy_pass %[5]s;
    }

    location / {
        set $auth_cookie '';
        add_header Set-Cookie $auth_cookie;
        auth_request /_external-auth;
        auth_request_set $auth_cookie $upstream_http_set_cookie;
        auth_request_set $authHeader0 $upstream_http_waiting_room_ticket;
        proxy_set_header 'Waiting-Room-Ticket' $authHeader0;
%[6]s
        proxy_set_header Host $host;
        proxy_set_header X-Real-IP $remote_addr;
        proxy_set_header X-Forwarded-For $remote_addr;
        proxy_pass http://%[7]s;
    }
}
}
`, listen, a["server-snippet"], room, a["auth-snippet"], a["auth-url"], a["configuration-snippet"], upstream)
	return startNginx(t, bin, conf, listen)
}

// annotations reads the nginx.ingress.kubernetes.io annotations of the
// Ingress metadata doc: one-line values, and the block scalars (|) of the
// snippets.
func annotations(t testing.TB, doc string) map[string]string {
	t.Helper()
	const prefix = "nginx.ingress.kubernetes.io/"
	out := map[string]string{}
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimLeft(lines[i], " ")
		if !strings.HasPrefix(trimmed, prefix) {
			continue
		}
		indent := len(lines[i]) - len(trimmed)
		name, value, ok := strings.Cut(strings.TrimPrefix(trimmed, prefix), ": ")
		require.True(t, ok, "annotation line %q", lines[i])
		if value != "|" {
			out[name] = value
			continue
		}
		var block []string
		for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " ")) > indent) {
			i++
			block = append(block, "    "+strings.TrimSpace(lines[i]))
		}
		out[name] = strings.Join(block, "\n")
	}
	return out
}

// caddy starts Caddy with docs/forward-auth/caddy/Caddyfile in front of
// room and upstream, returning its address. The file runs as it is but
// for its addresses: the site's port, the room's, the application's and
// the admin endpoint's.
func caddy(t testing.TB, bin, room, upstream string) string {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	conf := fromDocs(t, "caddy/Caddyfile",
		docCaddy+" {", ":"+port+" {",
		docRoom, room,
		docUpstream, upstream,
		docCaddyAdmin, "127.0.0.1:"+freePort(t))
	path := filepath.Join(dir, "Caddyfile")
	require.NoError(t, os.WriteFile(path, []byte(conf), 0o644))
	addr := "127.0.0.1:" + port
	start(t, "caddy", addr, dials(addr), bin, "run", "--config", path, "--adapter", "caddyfile")
	return addr
}

// admin changes the room's live settings through its admin API.
func patchSettings(t testing.TB, admin, body string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPatch, "http://"+admin+"/settings", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
}
