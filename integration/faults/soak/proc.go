package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one cmd/waitingroom process and what its runtime reports.
type proc struct {
	i    int
	port int
	args []string
	env  []string

	mu         sync.Mutex
	cmd        *exec.Cmd
	done       chan struct{}
	heapMB     float64 // live heap after the latest GC
	goroutines int     // at the latest scheduler trace
	outages    int     // "store unreachable" lines
	losses     int     // "shared state was lost" lines
	restarts   int
	tail       []string // latest other lines, for errors

	inSched bool
	gCount  int
}

func (s *soak) startProc(i int, upstream string) (*proc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	p := &proc{i: i, port: port,
		args: []string{"-upstream", upstream, "-listen", fmt.Sprintf("127.0.0.1:%d", port),
			"-store", "redis://" + s.o.redis + "/0", "-store-prefix", s.prefix, "-name", s.name, "-key", s.keyHex,
			"-total-active-users", strconv.Itoa(s.o.total), "-new-users-per-minute", strconv.Itoa(s.o.perMn),
			"-session-duration", s.o.session.String(), "-refresh-interval", s.o.refresh.String(),
			"-sync-interval", s.o.syncInterval.String()},
		env: append(os.Environ(), "GODEBUG=gctrace=1,schedtrace=10000,scheddetail=1"),
	}
	return p, p.start(s.o.bin)
}

// base is the process's URL.
func (p *proc) base() string { return fmt.Sprintf("http://127.0.0.1:%d", p.port) }

// start runs the process and waits until its health check answers.
func (p *proc) start(bin string) error {
	cmd := exec.Command(bin, p.args...)
	cmd.Env = p.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	go func() {
		p.read(stderr)
		_ = cmd.Wait()
		close(done)
	}()
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("process %d exited at start: %s", p.i+1, strings.Join(p.lastLines(), " | "))
		default:
		}
		if resp, err := c.Get(p.base() + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("process %d not healthy within 20 s", p.i+1)
}

// stop interrupts the process and waits for it (kills it after 15 s).
func (p *proc) stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// stopProcs stops every process.
func (s *soak) stopProcs() {
	for _, p := range s.procs {
		p.stop()
	}
}

// read parses the process's stderr: gctrace lines ("gc N @...: ... A->B->C
// MB, ..."), scheduler traces (a "SCHED" line, then one "  G..." line per
// goroutine), the room's log lines.
func (p *proc) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		switch {
		case strings.HasPrefix(line, "SCHED "):
			if p.inSched {
				p.goroutines = p.gCount
			}
			p.inSched, p.gCount = true, 0
		case p.inSched && strings.HasPrefix(line, "  G"):
			p.gCount++
		case p.inSched && (strings.HasPrefix(line, "  P") || strings.HasPrefix(line, "  M")):
		default:
			if p.inSched {
				p.goroutines, p.inSched = p.gCount, false
			}
			if strings.HasPrefix(line, "gc ") {
				if mb, ok := liveHeap(line); ok {
					p.heapMB = mb
				}
			} else {
				if strings.Contains(line, "store unreachable") {
					p.outages++
				}
				if strings.Contains(line, "shared state was lost") {
					p.losses++
				}
				p.tail = append(p.tail, line)
				if len(p.tail) > 20 {
					p.tail = p.tail[1:]
				}
			}
		}
		p.mu.Unlock()
	}
}

// liveHeap returns C of "A->B->C MB" in a gctrace line: the live heap
// after the collection.
func liveHeap(line string) (float64, bool) {
	for _, f := range strings.Fields(line) {
		if parts := strings.Split(f, "->"); len(parts) == 3 {
			if v, err := strconv.ParseFloat(parts[2], 64); err == nil {
				return v, true
			}
		}
	}
	return 0, false
}

// lastLines returns the latest lines of the process's stderr that were
// neither traces nor counted.
func (p *proc) lastLines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.tail)
}

// procStatus returns the resident memory (MB) and threads of pid from
// /proc.
func procStatus(pid int) (rssMB float64, threads int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			kb, _ := strconv.ParseFloat(f[1], 64)
			rssMB = kb / 1024
		case "Threads:":
			threads, _ = strconv.Atoi(f[1])
		}
	}
	return rssMB, threads
}
