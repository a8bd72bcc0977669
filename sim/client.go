package sim

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-waitingroom/waitingroom/template"
)

// response is a minimal http.ResponseWriter, reset and reused for every
// request of a run.
type response struct {
	header http.Header
	status int
	body   []byte
}

func newResponse() *response { return &response{header: make(http.Header, 8)} }

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *response) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.body = append(w.body, b...)
	return len(b), nil
}

func (w *response) reset() {
	clear(w.header)
	w.status = 0
	w.body = w.body[:0]
}

// appStatus is what the protected application answers: a status no waiting
// page uses, so a client can tell it got through.
const appStatus = http.StatusNoContent

// requests hands out reusable requests: a visitor holds one from arrival
// until they leave, carrying their cookie like a browser's cookie jar.
type requests struct {
	free []*http.Request
	url  *url.URL
}

func (p *requests) get() *http.Request {
	if n := len(p.free); n > 0 {
		r := p.free[n-1]
		p.free = p.free[:n-1]
		return r
	}
	if p.url == nil {
		p.url = &url.URL{Path: "/"}
	}
	return &http.Request{
		Method:     http.MethodGet,
		URL:        p.url,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Host:       "example.com",
		RequestURI: p.url.Path,
		RemoteAddr: "192.0.2.1:1234",
		Header:     http.Header{"Accept": {"application/json"}},
	}
}

func (p *requests) put(r *http.Request) {
	delete(r.Header, "Cookie")
	p.free = append(p.free, r)
}

// takeCookie copies the first cookie the response sets into r's Cookie
// header, as a browser would, and reports whether there was one.
func takeCookie(w *response, r *http.Request) bool {
	sc := w.header["Set-Cookie"]
	if len(sc) == 0 {
		return false
	}
	pair, _, _ := strings.Cut(sc[0], ";")
	if c := r.Header["Cookie"]; len(c) == 1 {
		c[0] = pair
	} else {
		r.Header["Cookie"] = []string{pair}
	}
	return true
}

// pageView is what a client reads from a waiting response.
type pageView struct {
	refresh  time.Duration // Refresh header, else refreshIntervalSeconds
	estimate Shown         // At is left to the caller
}

// readPage reads a waiting response as a client that asked for JSON: the
// body is one member whose value holds the page's variables
// ({"waitingRoom":{"waitTimeKnown":true,"waitTime":10,...}}), and the
// Refresh header, which a browser obeys, wins over refreshIntervalSeconds.
// It reports false for a body that is not such JSON.
func readPage(w *response) (pageView, bool) {
	var d template.Data
	if !decodePage(w.body, &d) {
		return pageView{}, false
	}
	pg := pageView{refresh: time.Duration(d.RefreshIntervalSeconds) * time.Second}
	if d.WaitTimeKnown {
		pg.estimate = Shown{
			Known: true,
			Full:  d.QueueIsFull,
			Wait:  time.Duration(d.WaitTime) * time.Minute,
			P25:   time.Duration(d.WaitTime25Percentile) * time.Minute,
			P50:   time.Duration(d.WaitTime50Percentile) * time.Minute,
			P75:   time.Duration(d.WaitTime75Percentile) * time.Minute,

			Position: d.PositionInLine,
		}
	}
	if d := refreshHeader(w); d > 0 {
		pg.refresh = d
	}
	return pg, true
}

// refreshHeader is the delay the response's Refresh header asks for; 0
// without a valid one.
func refreshHeader(w *response) time.Duration {
	if v := w.header["Refresh"]; len(v) > 0 {
		if s, err := strconv.Atoi(strings.TrimSpace(v[0])); err == nil && s > 0 {
			return time.Duration(s) * time.Second
		}
	}
	return 0
}
