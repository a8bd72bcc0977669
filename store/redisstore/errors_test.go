package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-waitingroom/waitingroom/internal/servicetest"
	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
	"github.com/go-waitingroom/waitingroom/store/storetest"
)

// TestErrorClasses checks that Update and Read say what is wrong, against real
// servers: credentials refused and commands forbidden are store.ErrAuth,
// a server that cannot be reached or does not answer is
// store.ErrUnavailable, and the client's own error stays in the chain.
func TestErrorClasses(t *testing.T) {
	srv := setup(t)
	ctx := context.Background()
	tests := []struct {
		name string
		// client returns the client the store uses.
		client  func(t *testing.T) *redis.Client
		timeout time.Duration // 0: 10 s
		want    error         // nil: Update succeeds
		// driver checks that the client's error is kept.
		driver  func(err error) bool
		message string // in the error: the fix
		// readable: Read (a GET) succeeds where Update fails.
		readable bool
	}{
		{
			name: "ACL user with the documented permissions",
			client: func(t *testing.T) *redis.Client {
				return newClient(t, srv.aclUser(t, documentedACL))
			},
		},
		{
			name: "ACL user, wrong password (WRONGPASS)",
			client: func(t *testing.T) *redis.Client {
				o := srv.aclUser(t, documentedACL)
				o.Password = "not-the-password"
				return newClient(t, o)
			},
			want: store.ErrAuth, driver: redis.IsAuthError, message: "Username and Password",
		},
		{
			name: "ACL user without GET (NOPERM)",
			client: func(t *testing.T) *redis.Client {
				return newClient(t, srv.aclUser(t, "+eval +evalsha +getrange +set"))
			},
			want: store.ErrAuth, driver: redis.IsPermissionError, message: "GET, EVAL, EVALSHA, GETRANGE and SET on the keys " + srv.prefix,
		},
		{
			name: "ACL user without SET, which the script runs",
			client: func(t *testing.T) *redis.Client {
				return newClient(t, srv.aclUser(t, "+get +eval +evalsha +getrange"))
			},
			want: store.ErrAuth, driver: isRedisError, message: "GET, EVAL, EVALSHA, GETRANGE and SET on the keys " + srv.prefix,
			readable: true,
		},
		{
			name: "requirepass, no password given (NOAUTH)",
			client: func(t *testing.T) *redis.Client {
				return newClient(t, &redis.Options{Addr: startRedis(t, "--requirepass", "s3cret")})
			},
			want: store.ErrAuth, driver: redis.IsAuthError, message: "Username and Password",
		},
		{
			name: "requirepass, wrong password (WRONGPASS)",
			client: func(t *testing.T) *redis.Client {
				return newClient(t, &redis.Options{Addr: startRedis(t, "--requirepass", "s3cret"), Password: "wrong"})
			},
			want: store.ErrAuth, driver: redis.IsAuthError, message: "Username and Password",
		},
		{
			name: "closed port",
			client: func(t *testing.T) *redis.Client {
				return newClient(t, &redis.Options{Addr: closedPort(t), MaxRetries: -1})
			},
			want: store.ErrUnavailable,
			driver: func(err error) bool {
				var op *net.OpError
				return errors.As(err, &op)
			},
			message: "connection refused",
		},
		{
			name: "server that never answers",
			client: func(t *testing.T) *redis.Client {
				return newClient(t, &redis.Options{Addr: silentServer(t), ContextTimeoutEnabled: true, MaxRetries: -1})
			},
			timeout: 200 * time.Millisecond,
			want:    store.ErrUnavailable, driver: isTimeout, message: "unavailable",
		},
		{
			name: "server that never answers, client without ContextTimeoutEnabled",
			client: func(t *testing.T) *redis.Client {
				return newClient(t, &redis.Options{Addr: silentServer(t), MaxRetries: -1})
			},
			timeout: 200 * time.Millisecond, // less than the client's ReadTimeout (3 s)
			want:    store.ErrUnavailable, driver: isTimeout, message: "unavailable",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := redisstore.New(tt.client(t), redisstore.Options{KeyPrefix: srv.prefix})
			t.Cleanup(func() { _ = s.Close() })
			ctx, cancel := context.WithTimeout(ctx, cmpOr(tt.timeout, 10*time.Second))
			defer cancel()
			room := storetest.RoomName("errors")
			err := s.Update(ctx, room, setEpoch(1))
			if tt.want == nil {
				require.NoError(t, err)
				// The history too.
				require.NoError(t, s.AppendHistory(ctx, room, []store.Record{{Minute: 1, Data: []byte("x")}}))
				recs, err := s.ReadHistory(ctx, room, 0, 2)
				require.NoError(t, err)
				assert.Len(t, recs, 1)
				got, err := s.Read(ctx, room)
				require.NoError(t, err)
				assert.Equal(t, uint64(1), got.Epoch)
				return
			}
			check := func(err error) {
				t.Helper()
				require.Error(t, err)
				t.Log(err)
				assert.ErrorIs(t, err, tt.want)
				for _, other := range []error{store.ErrNoSchema, store.ErrAuth, store.ErrUnavailable} {
					if other != tt.want {
						assert.NotErrorIs(t, err, other)
					}
				}
				assert.True(t, tt.driver(err), "the client's error must stay in the chain: %v", err)
				assert.Contains(t, err.Error(), tt.message)
				assert.Contains(t, err.Error(), "waitingroom/redisstore: ")
			}
			check(err)
			// Read: the same errors, classified the same way (a user
			// without SET may still GET).
			ctx, cancel = context.WithTimeout(context.Background(), cmpOr(tt.timeout, 10*time.Second))
			defer cancel()
			_, err = s.Read(ctx, room)
			if tt.readable {
				assert.NoError(t, err)
				return
			}
			check(err)
		})
	}
}

// TestCancel: Update returns as soon as its context is cancelled, even while
// the server holds a command (go-redis itself only watches the deadline),
// and a cancellation by the caller is not an outage of the store.
func TestCancel(t *testing.T) {
	c := newClient(t, &redis.Options{Addr: silentServer(t), ContextTimeoutEnabled: true, MaxRetries: -1})
	s := redisstore.New(c, redisstore.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	err := s.Update(ctx, "room", setEpoch(1))
	took := time.Since(start)
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, store.ErrUnavailable)
	assert.Less(t, took, time.Second, "Update must return once ctx is cancelled, not at the client's ReadTimeout (3 s)")
}

// documentedACL is what the package documentation says a Redis user needs,
// the history included.
const documentedACL = "+get +eval +evalsha +getrange +set +zadd +zremrangebyscore +pexpire +zrange"

// isTimeout reports a timeout of the connection or of the context (which
// comes first depends on the scheduler).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isRedisError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func newClient(t *testing.T, o *redis.Options) *redis.Client {
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// aclUser creates a Redis user allowed the commands perms on the test's keys,
// deleted at cleanup, and returns the options of a client logged in as that
// user.
func (srv *server) aclUser(t *testing.T, perms string) *redis.Options {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name, password := "wrtest_"+hex.EncodeToString(b[:]), hex.EncodeToString(b[:])+"pw"
	ctx := context.Background()
	args := []any{"ACL", "SETUSER", name, "reset", "on", ">" + password, "~" + srv.prefix + "*"}
	for _, p := range strings.Fields(perms) {
		args = append(args, p)
	}
	require.NoError(t, srv.admin.Do(ctx, args...).Err())
	t.Cleanup(func() { _ = srv.admin.Do(context.Background(), "ACL", "DELUSER", name).Err() })
	o := *srv.opts
	o.Username, o.Password = name, password
	return &o
}

// startRedis starts a redis-server of the test's own on a free loopback
// port, with args, stopped at cleanup, and returns its address. It skips
// (fails in CI) when redis-server is not installed.
func startRedis(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		servicetest.Unavailable(t, servicetest.Program("redis-server", "to run a server of the test's own"), err)
	}
	addr := closedPort(t)
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, append([]string{"--port", port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir()}, args...)...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Wait until it accepts connections (any answer, NOAUTH included).
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = conn.Close()
			return addr
		}
		require.True(t, time.Now().Before(deadline), "redis-server did not start: %v", err)
		time.Sleep(10 * time.Millisecond)
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// silentServer returns the address of a server that accepts connections and
// never answers, closed at cleanup.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
			close(done)
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return ln.Addr().String()
}
