package wrcaddy

import (
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/memstore"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
)

// openStore opens the store a URL names, as cmd/waitingroom's -store
// does for memory and Redis: "memory" (or "") keeps the state in this
// process, redis:// or rediss:// (TLS) shares it through Redis, with
// prefix as the key prefix ("" for redisstore's default). The closer
// releases what the store holds (Redis's connections).
func openStore(raw, prefix string) (store.Store, io.Closer, error) {
	switch {
	case raw == "" || raw == "memory":
		return memstore.New(), io.NopCloser(nil), nil
	case strings.HasPrefix(raw, "redis://"), strings.HasPrefix(raw, "rediss://"):
		opts, err := redis.ParseURL(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("store %s: %w", redact(raw), err)
		}
		c := redis.NewClient(opts)
		return redisstore.New(c, redisstore.Options{KeyPrefix: prefix}), c, nil
	}
	return nil, nil, fmt.Errorf("store %s: want memory, redis://host:port/db or rediss://host:port/db", redact(raw))
}

// redact is a store URL without its password, for errors and logs.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	return u.Redacted()
}
