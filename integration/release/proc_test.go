package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
)

// The cookie key and the admin token every process of the test shares.
const (
	hexKey     = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	adminToken = "release-test-admin-token"
)

// client is the HTTP client of the test's own requests (visitors have
// theirs).
var client = &http.Client{Timeout: 5 * time.Second}

// proc is one running cmd/waitingroom process.
type proc struct {
	name   string
	base   string // the proxy: http://127.0.0.1:port
	admin  string // the admin API
	cmd    *exec.Cmd
	out    *servicetest.Buffer
	exited chan struct{}
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// startProc starts bin with args, on free loopback ports for the proxy
// and the admin API, and waits until its health check answers. It is
// stopped at the end of the test, and its output logged if the test
// failed.
func startProc(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	for attempt := 0; ; attempt++ {
		port, adminPort := freePort(t), freePort(t)
		p := &proc{
			name:   name,
			base:   "http://127.0.0.1:" + port,
			admin:  "http://127.0.0.1:" + adminPort,
			out:    &servicetest.Buffer{},
			exited: make(chan struct{}),
		}
		p.cmd = exec.Command(bin, append(append([]string{}, args...),
			"-listen", "127.0.0.1:"+port, "-admin-listen", "127.0.0.1:"+adminPort, "-admin-token", adminToken)...)
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		require.NoError(t, p.cmd.Start())
		go func() { _ = p.cmd.Wait(); close(p.exited) }()
		err := p.waitHealthy(20 * time.Second)
		if err == nil {
			t.Cleanup(func() {
				p.stop()
				if t.Failed() {
					t.Logf("output of %s:\n%s", p.name, p.out.String())
				}
			})
			return p
		}
		p.stop()
		if attempt < 2 && strings.Contains(p.out.String(), "address already in use") {
			continue // a port was taken in the meantime
		}
		t.Fatalf("%s did not start: %v\n%s", name, err, p.out.String())
	}
}

func (p *proc) waitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("exited: %v", p.cmd.ProcessState)
		default:
		}
		if resp, err := client.Get(p.base + "/healthz"); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no healthy answer within %v", timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop interrupts the process and kills it if it has not exited within
// 10 seconds.
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

// status is what the admin API's GET /status says, in part.
type status struct {
	Active    int `json:"active"`
	Waiting   int `json:"waiting"`
	Instances int `json:"instances"`
	Settings  struct {
		TotalActiveUsers   int `json:"totalActiveUsers"`
		QueueingStatusCode int `json:"queueingStatusCode"`
	} `json:"settings"`
	Counters struct {
		Admitted   uint64 `json:"admitted"`
		Queued     uint64 `json:"queued"`
		Syncs      uint64 `json:"syncs"`
		SyncErrors uint64 `json:"syncErrors"`
	} `json:"counters"`
}

// adminDo sends a request to the admin API and decodes its JSON answer
// into v.
func (p *proc) adminDo(method, path string, body []byte, v any) error {
	req, err := http.NewRequest(method, p.admin+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s of %s: %s: %s", method, path, p.name, resp.Status, b)
	}
	return json.Unmarshal(b, v)
}

func (p *proc) status() (status, error) {
	var s status
	err := p.adminDo(http.MethodGet, "/status", nil, &s)
	return s, err
}

// visitor is a browser: it keeps its cookies, and the cookies of
// 127.0.0.1 go to every process, whatever its port.
type visitor struct {
	name string
	c    *http.Client
}

func newVisitor(t *testing.T, name string) *visitor {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &visitor{name: name, c: &http.Client{Jar: jar, Timeout: 5 * time.Second}}
}

// page is what a visitor got.
type page struct {
	status   int
	in       bool // the application's page
	position int  // in the queue, 1 is next; 0 when in
}

func (pg page) String() string {
	if pg.in {
		return fmt.Sprintf("let in (%d)", pg.status)
	}
	return fmt.Sprintf("waiting at %d (%d)", pg.position, pg.status)
}

// visit asks p for the site's home page as a JSON client: the waiting
// room answers in JSON, the demo application in HTML.
func (v *visitor) visit(p *proc) (page, error) {
	req, err := http.NewRequest(http.MethodGet, p.base+"/", nil)
	if err != nil {
		return page{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.c.Do(req)
	if err != nil {
		return page{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return page{}, err
	}
	pg := page{status: resp.StatusCode}
	if bytes.Contains(body, []byte("You're in")) {
		pg.in = true
		return pg, nil
	}
	var w struct {
		WaitingRoom *struct {
			InWaitingRoom  bool `json:"inWaitingRoom"`
			PositionInLine int  `json:"positionInLine"`
		} `json:"waitingRoom"`
	}
	if err := json.Unmarshal(body, &w); err != nil || w.WaitingRoom == nil || !w.WaitingRoom.InWaitingRoom {
		return pg, fmt.Errorf("%s from %s: %d, neither the application's page nor a waiting page: %.300s", v.name, p.name, resp.StatusCode, body)
	}
	pg.position = w.WaitingRoom.PositionInLine
	return pg, nil
}
