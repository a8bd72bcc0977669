package faults

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a loopback TCP proxy between a store client and its server that
// can slow the traffic down, hold back a reply or cut the clients off. It forwards bytes as
// they come, in order, in both directions.
type Proxy struct {
	ln     net.Listener
	target string
	delay  atomic.Int64 // ns added to each direction of every round trip
	stall  atomic.Pointer[stall]
	cut    atomic.Bool // connections are dropped (Cut)

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// stall holds back the replies on the connection that sends marker.
type stall struct {
	marker []byte
	hold   time.Duration
	done   chan struct{}
	fired  atomic.Bool
}

// StartProxy listens on a free loopback port and forwards every
// connection to target (host:port). It is closed when the test ends.
func StartProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port, for the client.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetLatency makes every round trip through the proxy take rtt longer:
// half of it is added to each direction. Zero forwards at once again.
// Bytes already on their way keep the latency they were read with.
func (p *Proxy) SetLatency(rtt time.Duration) { p.delay.Store(int64(rtt / 2)) }

// StallReply arms a one-shot stall: the next chunk sent by a client that
// contains marker goes to the server as usual, but nothing the server
// sends back on that connection reaches the client, and after hold the
// connection is closed. The server executes the command; the client never
// learns its outcome. The returned channel is closed when the stall has
// happened (the connection was closed).
func (p *Proxy) StallReply(marker []byte, hold time.Duration) <-chan struct{} {
	s := &stall{marker: bytes.Clone(marker), hold: hold, done: make(chan struct{})}
	p.stall.Store(s)
	return s.done
}

// Cut drops every connection through the proxy and every new one until
// Mend: the clients are cut off from the server (a network partition),
// which serves on for others.
func (p *Proxy) Cut() {
	p.cut.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

// Mend ends a Cut: new connections are forwarded again.
func (p *Proxy) Mend() { p.cut.Store(false) }

// Close stops accepting, closes every connection and waits for the
// forwarding goroutines. It is idempotent.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.cut.Load() {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.cut.Load() {
			_ = client.Close()
			continue
		}
		server, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !p.track(client) || !p.track(server) {
			_ = client.Close()
			_ = server.Close()
			continue
		}
		pc := &proxyConn{p: p, client: client, server: server}
		p.wg.Add(2)
		go pc.pump(client, server, true)
		go pc.pump(server, client, false)
	}
}

// proxyConn is one client connection and its server connection.
type proxyConn struct {
	p              *Proxy
	client, server net.Conn
	muted          atomic.Bool // replies are dropped (a stall fired)
}

type chunk struct {
	b   []byte
	due time.Time
}

// pump copies from src to dst, each chunk delayed by the proxy's latency
// at the time it was read. upstream is the client-to-server direction.
func (pc *proxyConn) pump(src, dst net.Conn, upstream bool) {
	defer pc.p.wg.Done()
	queue := make(chan chunk, 4096)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for c := range queue {
			if d := time.Until(c.due); d > 0 {
				time.Sleep(d)
			}
			if !upstream && pc.muted.Load() {
				continue
			}
			if _, err := dst.Write(c.b); err != nil {
				for range queue { // drain until the reader stops
				}
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			b := bytes.Clone(buf[:n])
			if upstream {
				pc.maybeStall(b)
			}
			queue <- chunk{b: b, due: time.Now().Add(time.Duration(pc.p.delay.Load()))}
		}
		if err != nil {
			break
		}
	}
	close(queue)
	<-writerDone
	if tcp, ok := dst.(*net.TCPConn); ok {
		_ = tcp.CloseWrite()
	}
	pc.p.untrack(src)
}

// maybeStall fires the armed stall if b carries its marker.
func (pc *proxyConn) maybeStall(b []byte) {
	s := pc.p.stall.Load()
	if s == nil || !bytes.Contains(b, s.marker) || !s.fired.CompareAndSwap(false, true) {
		return
	}
	pc.p.stall.CompareAndSwap(s, nil)
	pc.muted.Store(true)
	time.AfterFunc(s.hold, func() {
		pc.p.untrack(pc.client)
		pc.p.untrack(pc.server)
		close(s.done)
	})
}
