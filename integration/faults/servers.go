package faults

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the MariaDB driver
	_ "github.com/jackc/pgx/v5/stdlib" // the PostgreSQL driver
	"github.com/redis/go-redis/v9"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
)

// startTimeout bounds how long a server may take to answer after it was
// started.
const startTimeout = 30 * time.Second

// Buffer is a bytes.Buffer safe for concurrent use: the output of a server
// or the log of a room.
type Buffer = servicetest.Buffer

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago.
// Another process may take it before it is used: the servers retry.
var FreePort = servicetest.FreePort

// child is a server process started by a test.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	out  *Buffer
}

// startChild starts bin with args, its output going to out. The process
// is killed if the test process dies (Pdeathsig); cred, if not nil, runs it
// as another user.
func startChild(name string, out *Buffer, cred *syscall.Credential, bin string, args ...string) (*child, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{}), out: out}
	go func() { _ = cmd.Wait(); close(c.done) }()
	return c, nil
}

// exited reports whether the process has ended.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends sig and waits up to grace for the process to end, then kills
// it. Stopping an ended process does nothing.
func (c *child) stop(sig os.Signal, grace time.Duration) {
	if c == nil || c.exited() {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGCONT) // a paused process cannot act on sig
	_ = c.cmd.Process.Signal(sig)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// signal sends sig to the running process.
func (c *child) signal(sig os.Signal) error {
	if c.exited() {
		return fmt.Errorf("%s has exited", c.name)
	}
	return c.cmd.Process.Signal(sig)
}

// waitReady calls ping until it succeeds, the process exits or
// startTimeout passes.
func (c *child) waitReady(ping func(context.Context) error) error {
	deadline := time.Now().Add(startTimeout)
	for {
		if c.exited() {
			return fmt.Errorf("%s exited: %v", c.name, c.cmd.ProcessState)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := ping(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: no answer within %v: %w", c.name, startTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lookBinary returns the path of the first of names found in PATH or in
// dirs, or skips the test (fails it with WAITINGROOM_REQUIRE_SERVICES=1).
func lookBinary(tb testing.TB, service string, dirs []string, names ...string) string {
	tb.Helper()
	var firstErr error
	for _, name := range names {
		p, err := exec.LookPath(name)
		if err == nil {
			return p
		}
		if firstErr == nil {
			firstErr = err
		}
		for _, d := range dirs {
			if p := filepath.Join(d, name); isExecutable(p) {
				return p
			}
		}
	}
	servicetest.Unavailable(tb, servicetest.Program(strings.Join(names, " or "), "to run a "+service+" server of the test's own"), firstErr)
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// RedisServer is a redis-server child process of a test on a port of its
// own, without persistence: killed and started again, it comes back empty.
type RedisServer struct {
	tb   testing.TB
	bin  string
	dir  string
	port int
	out  *Buffer

	mu   sync.Mutex
	proc *child
}

// StartRedis starts redis-server on a free loopback port and waits until it
// answers PING. The server is killed when the test ends, and its output is
// logged if the test failed. Without the binary the test is skipped.
func StartRedis(tb testing.TB) *RedisServer {
	tb.Helper()
	s := &RedisServer{tb: tb, bin: lookBinary(tb, "redis-server", nil, "redis-server"), dir: tb.TempDir(), out: &Buffer{}}
	tb.Cleanup(func() {
		s.Kill()
		if tb.Failed() && os.Getenv("WAITINGROOM_FAULTS_SERVER_LOGS") == "1" {
			tb.Logf("redis-server output:\n%s", s.out.String())
		}
	})
	var err error
	for range 3 {
		if s.port, err = FreePort(); err != nil {
			continue
		}
		if err = s.Start(); err == nil {
			return s
		}
	}
	tb.Fatalf("redis-server did not start: %v\n%s", err, s.out.String())
	return nil
}

// Addr is the server's host:port.
func (s *RedisServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Client returns a new client of the server with go-redis's defaults; the
// test closes it at its end.
func (s *RedisServer) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	s.tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Start starts the server on its port, empty, and waits for PING. It is
// how a test restarts a killed server.
func (s *RedisServer) Start() error {
	p, err := startChild("redis-server", s.out, nil, s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	if err := p.waitReady(func(ctx context.Context) error { return c.Ping(ctx).Err() }); err != nil {
		p.stop(syscall.SIGKILL, time.Second)
		return err
	}
	return nil
}

func (s *RedisServer) current() *child {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// Kill kills the server at once (SIGKILL): whatever it held is lost.
func (s *RedisServer) Kill() { s.current().stop(syscall.SIGKILL, 5*time.Second) }

// Pause stops the server with SIGSTOP: connections stay open and nothing
// answers.
func (s *RedisServer) Pause() error { return s.current().signal(syscall.SIGSTOP) }

// Resume lets a paused server go on (SIGCONT).
func (s *RedisServer) Resume() error { return s.current().signal(syscall.SIGCONT) }

// PostgresServer is a throwaway PostgreSQL cluster of a test: initdb in a
// temporary directory, the postmaster as a child process listening on a
// loopback port of its own with trust authentication. When the test runs
// as root, the cluster runs as the postgres user.
type PostgresServer struct {
	tb   testing.TB
	bin  string // directory of initdb and postgres
	dir  string // owned by the server's user: data/ and the unix socket
	port int
	cred *syscall.Credential
	out  *Buffer

	mu   sync.Mutex
	proc *child
}

// postgresBinDirs lists the directories of Debian's PostgreSQL packages,
// newest first.
func postgresBinDirs() []string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	return dirs
}

// StartPostgres creates a cluster in a temporary directory and starts it
// on a free loopback port; it is stopped when the test ends. Without the
// binaries (or, as root, without a postgres user) the test is skipped.
func StartPostgres(tb testing.TB) *PostgresServer {
	tb.Helper()
	initdb := lookBinary(tb, "PostgreSQL", postgresBinDirs(), "initdb")
	s := &PostgresServer{tb: tb, bin: filepath.Dir(initdb), out: &Buffer{}}
	if !isExecutable(filepath.Join(s.bin, "postgres")) {
		servicetest.Unavailable(tb, servicetest.Program("postgres", "beside initdb, to run a PostgreSQL server of the test's own"), errors.New(filepath.Join(s.bin, "postgres")+" not found"))
	}
	s.dir = tb.TempDir()
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root: run it as postgres, in a
		// directory of its own that it can reach.
		u, err := user.Lookup("postgres")
		if err != nil {
			servicetest.Unavailable(tb, servicetest.Service{Name: "a postgres user to run PostgreSQL as (the test runs as root)"}, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
		if err := os.Chmod(filepath.Dir(s.dir), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.Chown(s.dir, uid, gid); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Cleanup(func() {
		s.Stop()
		if tb.Failed() {
			tb.Logf("postgres output:\n%s", s.out.String())
		}
	})
	p, err := startChild("initdb", s.out, s.cred, initdb, "-D", filepath.Join(s.dir, "data"), "-A", "trust",
		"-U", "postgres", "-E", "UTF8", "--no-sync", "--no-instructions")
	if err != nil {
		tb.Fatal(err)
	}
	<-p.done
	if !p.cmd.ProcessState.Success() {
		tb.Fatalf("initdb failed: %v\n%s", p.cmd.ProcessState, s.out.String())
	}
	for range 3 {
		if s.port, err = FreePort(); err != nil {
			continue
		}
		if err = s.Start(); err == nil {
			return s
		}
	}
	tb.Fatalf("postgres did not start: %v\n%s", err, s.out.String())
	return nil
}

// DSN is the pgx URL of the cluster's postgres database.
func (s *PostgresServer) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// DB opens a new pool on the cluster; the test closes it at its end.
func (s *PostgresServer) DB() *sql.DB {
	db, err := sql.Open("pgx", s.DSN())
	if err != nil {
		s.tb.Fatal(err)
	}
	s.tb.Cleanup(func() { _ = db.Close() })
	return db
}

// Start starts the postmaster on the cluster's port and waits until it
// accepts a query. It is how a test restarts a stopped server.
func (s *PostgresServer) Start() error {
	p, err := startChild("postgres", s.out, s.cred, filepath.Join(s.bin, "postgres"),
		"-D", filepath.Join(s.dir, "data"), "-p", strconv.Itoa(s.port), "-h", "127.0.0.1", "-k", s.dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=16MB", "-c", "max_connections=100", "-c", "logging_collector=off")
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	db, err := sql.Open("pgx", s.DSN())
	if err != nil {
		return err
	}
	defer db.Close()
	if err := p.waitReady(func(ctx context.Context) error { return db.PingContext(ctx) }); err != nil {
		p.stop(syscall.SIGQUIT, 5*time.Second)
		return err
	}
	return nil
}

// Stop shuts the server down (fast shutdown: sessions are ended, the data
// is kept) and waits until it has exited.
func (s *PostgresServer) Stop() {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	p.stop(syscall.SIGINT, 15*time.Second)
}

// MariaDBServer is a throwaway MariaDB server of a test: mariadbd on an
// empty data directory in a temporary directory, on a loopback port of its
// own, without grant tables (anyone connects as root, no password).
type MariaDBServer struct {
	tb   testing.TB
	bin  string
	dir  string
	port int
	out  *Buffer

	mu   sync.Mutex
	proc *child
}

// MariaDBDatabase is the database the server's DSN selects; StartMariaDB
// creates it.
const MariaDBDatabase = "waitingroom"

// StartMariaDB starts mariadbd on an empty data directory and a free
// loopback port and creates MariaDBDatabase; the server is stopped when
// the test ends. Without the binary the test is skipped.
func StartMariaDB(tb testing.TB) *MariaDBServer {
	tb.Helper()
	s := &MariaDBServer{tb: tb, bin: lookBinary(tb, "MariaDB", []string{"/usr/sbin"}, "mariadbd", "mysqld"), out: &Buffer{}}
	s.dir = tb.TempDir()
	if err := os.Mkdir(filepath.Join(s.dir, "data"), 0o700); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		s.Stop()
		if tb.Failed() {
			tb.Logf("mariadbd output:\n%s", s.out.String())
		}
	})
	var err error
	for range 3 {
		if s.port, err = FreePort(); err != nil {
			continue
		}
		if err = s.Start(); err == nil {
			break
		}
	}
	if err != nil {
		tb.Fatalf("mariadbd did not start: %v\n%s", err, s.out.String())
	}
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", s.port))
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE IF NOT EXISTS " + MariaDBDatabase); err != nil {
		tb.Fatal(err)
	}
	return s
}

// DSN is the go-sql-driver/mysql DSN of MariaDBDatabase.
func (s *MariaDBServer) DSN() string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", s.port, MariaDBDatabase)
}

// DB opens a new pool on MariaDBDatabase; the test closes it at its end.
func (s *MariaDBServer) DB() *sql.DB {
	db, err := sql.Open("mysql", s.DSN())
	if err != nil {
		s.tb.Fatal(err)
	}
	s.tb.Cleanup(func() { _ = db.Close() })
	return db
}

// Start starts mariadbd on the server's port and data directory and waits
// until it accepts a query. It is how a test restarts a stopped server.
func (s *MariaDBServer) Start() error {
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(s.dir, "data"),
		"--port=" + strconv.Itoa(s.port), "--bind-address=127.0.0.1", "--socket=" + filepath.Join(s.dir, "sock"),
		"--pid-file=" + filepath.Join(s.dir, "pid"), "--skip-grant-tables", "--skip-log-bin",
		"--innodb-buffer-pool-size=16M", "--innodb-log-file-size=8M", "--innodb-flush-log-at-trx-commit=0",
		"--skip-name-resolve"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	p, err := startChild("mariadbd", s.out, nil, s.bin, args...)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", s.port))
	if err != nil {
		return err
	}
	defer db.Close()
	if err := p.waitReady(func(ctx context.Context) error { return db.PingContext(ctx) }); err != nil {
		p.stop(syscall.SIGKILL, 5*time.Second)
		return err
	}
	return nil
}

// Stop shuts the server down (SIGTERM: a clean shutdown, the data is
// kept) and waits until it has exited.
func (s *MariaDBServer) Stop() {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	p.stop(syscall.SIGTERM, 20*time.Second)
}
