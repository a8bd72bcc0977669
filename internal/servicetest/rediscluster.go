package servicetest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ClusterNodeTimeout is the cluster-node-timeout of the nodes of a
// RedisCluster: how long a primary may be unreachable before its replica
// takes over.
const ClusterNodeTimeout = 1000 * time.Millisecond

// clusterStartTimeout bounds how long a cluster may take to form, and a
// failover to complete.
const clusterStartTimeout = 30 * time.Second

// RedisCluster is a Redis Cluster of six redis-server processes on
// loopback that a test started, each in a temporary directory of its own:
// three primaries, serving the slots 0-5460, 5461-10922 and 10923-16383,
// and a replica of each. Nothing is persisted. The processes are killed
// when the test ends, and if the test process dies. Its methods may be
// called from several goroutines.
type RedisCluster struct {
	mu    sync.Mutex
	nodes []*clusterNode
}

type clusterNode struct {
	addr string
	bus  int // the cluster bus port
	cmd  *exec.Cmd
	done chan struct{}
	out  *Buffer
}

func (n *clusterNode) exited() bool {
	select {
	case <-n.done:
		return true
	default:
		return false
	}
}

// StartRedisCluster starts a RedisCluster and waits until every node
// reports the cluster ok and every replica is in sync with its primary. It
// skips the test without redis-server on PATH, or fails it when Required.
// It takes about a second.
func StartRedisCluster(tb testing.TB) *RedisCluster {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Unavailable(tb, Program("redis-server", "to run a Redis Cluster of the test's own"), err)
		return nil
	}
	dir := tb.TempDir()
	c := &RedisCluster{}
	tb.Cleanup(c.stop)
	for i := range 6 {
		n, err := startClusterNode(bin, filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			tb.Fatalf("servicetest: start a Redis Cluster node: %v", err)
		}
		c.nodes = append(c.nodes, n)
	}
	if err := c.form(); err != nil {
		for _, n := range c.nodes {
			tb.Logf("redis-server %s:\n%s", n.addr, n.out.String())
		}
		tb.Fatalf("servicetest: form a Redis Cluster: %v", err)
	}
	return c
}

// startClusterNode starts one node with its data and configuration in dir.
func startClusterNode(bin, dir string) (*clusterNode, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var lastErr error
	for range 5 { // a port found free may be taken before the server binds it
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		bus, err := FreePort()
		if err != nil {
			return nil, err
		}
		n := &clusterNode{addr: "127.0.0.1:" + strconv.Itoa(port), bus: bus, done: make(chan struct{}), out: &Buffer{}}
		n.cmd = exec.Command(bin,
			"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--cluster-port", strconv.Itoa(bus),
			"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-node-timeout", strconv.FormatInt(ClusterNodeTimeout.Milliseconds(), 10),
			// A replica takes over however long ago it last heard from
			// its primary (on a loaded machine it might otherwise judge
			// its data too old to: a failover once did not come in 30 s).
			"--cluster-replica-validity-factor", "0",
			"--dir", dir, "--save", "", "--repl-diskless-sync-delay", "0", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no")
		n.cmd.Stdout, n.cmd.Stderr = n.out, n.out
		n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := n.cmd.Start(); err != nil {
			return nil, err
		}
		go func() { _ = n.cmd.Wait(); close(n.done) }()
		lastErr = waitFor(10*time.Second, func() error {
			if n.exited() {
				return errStop
			}
			// Another server may hold the port (a port found free was
			// taken meanwhile, ours failing to bind): only ours counts.
			info, err := redisDo(n.addr, "INFO", "server")
			if err == nil && !strings.Contains(fmt.Sprint(info), "process_id:"+strconv.Itoa(n.cmd.Process.Pid)+"\r\n") {
				return fmt.Errorf("%s: another server answers", n.addr)
			}
			return err
		})
		if lastErr == nil {
			return n, nil
		}
		n.kill()
		lastErr = fmt.Errorf("%s: %w:\n%s", n.addr, lastErr, n.out.String())
	}
	return nil, lastErr
}

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago.
// Another process may take it before it is used: a server started on it
// must be retried on another.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// form assigns the slots to the first three nodes, introduces every node
// to the first, makes each of the last three a replica of one of the
// first three, and waits until the cluster is ok and in sync.
func (c *RedisCluster) form() error {
	ranges := [3][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}
	ids := make([]string, 3)
	for i, r := range ranges {
		if _, err := redisDo(c.nodes[i].addr, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(r[0]), strconv.Itoa(r[1])); err != nil {
			return err
		}
		id, err := redisDo(c.nodes[i].addr, "CLUSTER", "MYID")
		if err != nil {
			return err
		}
		ids[i] = id.(string)
	}
	host, port, _ := net.SplitHostPort(c.nodes[0].addr)
	for _, n := range c.nodes[1:] {
		if _, err := redisDo(n.addr, "CLUSTER", "MEET", host, port, strconv.Itoa(c.nodes[0].bus)); err != nil {
			return err
		}
	}
	for i, n := range c.nodes[3:] {
		// The replica must know its primary before it can follow it.
		err := waitFor(clusterStartTimeout, func() error {
			_, err := redisDo(n.addr, "CLUSTER", "REPLICATE", ids[i])
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: replicate %s: %w", n.addr, c.nodes[i].addr, err)
		}
	}
	return waitFor(clusterStartTimeout, func() error {
		for _, n := range c.nodes {
			if err := clusterOK(n.addr); err != nil {
				return err
			}
		}
		for _, n := range c.nodes[3:] {
			info, err := redisDo(n.addr, "INFO", "replication")
			if err != nil {
				return err
			}
			if !strings.Contains(info.(string), "master_link_status:up") {
				return fmt.Errorf("%s: replica not in sync yet", n.addr)
			}
		}
		return nil
	})
}

// clusterOK returns nil when the node at addr says the cluster is ok and
// it knows the six nodes.
func clusterOK(addr string) error {
	info, err := redisDo(addr, "CLUSTER", "INFO")
	if err != nil {
		return err
	}
	s := info.(string)
	if !strings.Contains(s, "cluster_state:ok") || !strings.Contains(s, "cluster_known_nodes:6") {
		return fmt.Errorf("%s: cluster not ready", addr)
	}
	return nil
}

// Addrs returns the addresses (host:port) of the six nodes, the live and
// the killed, primaries first as the cluster was formed.
func (c *RedisCluster) Addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.addr
	}
	return out
}

// Primaries returns the addresses of the primaries, by the first slot
// they serve, as a live node sees them now.
func (c *RedisCluster) Primaries() ([]string, error) {
	nodes, err := c.clusterNodes()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range [3]int{0, 5461, 10923} {
		for _, n := range nodes {
			if n.serves(r) {
				out = append(out, n.addr)
			}
		}
	}
	return out, nil
}

// PrimaryOf returns the address of the primary that serves slot, as a
// live node sees it now.
func (c *RedisCluster) PrimaryOf(slot int) (string, error) {
	nodes, err := c.clusterNodes()
	if err != nil {
		return "", err
	}
	for _, n := range nodes {
		if n.serves(slot) {
			return n.addr, nil
		}
	}
	return "", fmt.Errorf("servicetest: no node serves slot %d", slot)
}

// ReplicaOf returns the address of a replica of the primary at addr, as
// a live node sees it now.
func (c *RedisCluster) ReplicaOf(addr string) (string, error) {
	nodes, err := c.clusterNodes()
	if err != nil {
		return "", err
	}
	for _, p := range nodes {
		if p.addr != addr {
			continue
		}
		for _, r := range nodes {
			if r.primary == p.id {
				return r.addr, nil
			}
		}
	}
	return "", fmt.Errorf("servicetest: no replica of %s", addr)
}

// Kill kills the node at addr with SIGKILL and waits for the process to
// end.
func (c *RedisCluster) Kill(addr string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if n.addr == addr {
			n.kill()
			return nil
		}
	}
	return fmt.Errorf("servicetest: no node at %s", addr)
}

// WaitFailover waits until the slots the node at dead served are served by
// a live node and every live node reports the cluster ok, and returns the
// address of the new primary. Call it after Kill(dead).
func (c *RedisCluster) WaitFailover(dead string) (string, error) {
	var promoted string
	err := waitFor(clusterStartTimeout, func() error {
		for _, addr := range c.live() {
			info, err := redisDo(addr, "CLUSTER", "INFO")
			if err != nil {
				return err
			}
			if !strings.Contains(info.(string), "cluster_state:ok") {
				return fmt.Errorf("%s: cluster not ok", addr)
			}
		}
		nodes, err := c.clusterNodes()
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if n.addr == dead && len(n.slots) > 0 {
				return fmt.Errorf("%s still serves its slots", dead)
			}
		}
		for _, n := range nodes {
			if n.addr != dead && len(n.slots) > 0 && !c.wasPrimary(n.addr) {
				promoted = n.addr
			}
		}
		if promoted == "" {
			return errors.New("no replica promoted yet")
		}
		return nil
	})
	if err != nil {
		// What the nodes said of it, for the test's failure.
		var logs strings.Builder
		c.mu.Lock()
		for _, n := range c.nodes {
			out := n.out.String()
			fmt.Fprintf(&logs, "\n--- %s, its log's end:\n%s", n.addr, out[max(0, len(out)-2000):])
		}
		c.mu.Unlock()
		err = fmt.Errorf("%w%s", err, logs.String())
	}
	return promoted, err
}

// wasPrimary reports whether addr is one of the three nodes formed as
// primaries.
func (c *RedisCluster) wasPrimary(addr string) bool {
	for _, n := range c.nodes[:3] {
		if n.addr == addr {
			return true
		}
	}
	return false
}

// live returns the addresses of the nodes still running.
func (c *RedisCluster) live() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range c.nodes {
		if !n.exited() {
			out = append(out, n.addr)
		}
	}
	return out
}

// nodeInfo is a line of CLUSTER NODES: a node's address and, for a
// primary, its slot ranges.
type nodeInfo struct {
	id, addr string
	primary  string // the ID of a replica's primary; "" for a primary
	slots    [][2]int
}

func (n nodeInfo) serves(slot int) bool {
	for _, r := range n.slots {
		if r[0] <= slot && slot <= r[1] {
			return true
		}
	}
	return false
}

// clusterNodes reads CLUSTER NODES from the first live node that answers.
// A node marked failed is left out.
func (c *RedisCluster) clusterNodes() ([]nodeInfo, error) {
	var lastErr error = errors.New("servicetest: no live node")
	for _, addr := range c.live() {
		r, err := redisDo(addr, "CLUSTER", "NODES")
		if err != nil {
			lastErr = err
			continue
		}
		var out []nodeInfo
		for line := range strings.SplitSeq(strings.TrimSpace(r.(string)), "\n") {
			f := strings.Fields(line)
			if len(f) < 8 || strings.Contains(f[2], "fail") && !strings.Contains(f[2], "fail?") {
				continue
			}
			n := nodeInfo{id: f[0], addr: strings.SplitN(f[1], "@", 2)[0], primary: strings.Trim(f[3], "-")}
			for _, s := range f[8:] {
				if strings.HasPrefix(s, "[") { // a slot being migrated
					continue
				}
				lo, hi, found := strings.Cut(s, "-")
				if !found {
					hi = lo
				}
				a, err1 := strconv.Atoi(lo)
				b, err2 := strconv.Atoi(hi)
				if err1 == nil && err2 == nil {
					n.slots = append(n.slots, [2]int{a, b})
				}
			}
			out = append(out, n)
		}
		return out, nil
	}
	return nil, lastErr
}

// stop kills every node.
func (c *RedisCluster) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		n.kill()
	}
}

func (n *clusterNode) kill() {
	if n.exited() {
		return
	}
	_ = n.cmd.Process.Kill()
	<-n.done
}

// errStop ends waitFor at once.
var errStop = errors.New("servicetest: the process exited")

// waitFor calls f every 20 ms until it returns nil or errStop, or timeout
// passes, and returns its last error.
func waitFor(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil || errors.Is(err, errStop) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// redisDo sends one command to the server at addr on a new connection and
// returns its reply: a string for a simple or bulk string, an int64, a
// []any, nil, or the server's error.
func redisDo(addr string, args ...string) (any, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		return nil, err
	}
	return readReply(bufio.NewReader(conn))
}

// readReply reads one RESP2 reply.
func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("servicetest: empty reply")
	}
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return nil, fmt.Errorf("redis: %s", line[1:])
	case ':':
		return strconv.ParseInt(line[1:], 10, 64)
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = readReply(r); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("servicetest: unexpected reply %q", line)
}
