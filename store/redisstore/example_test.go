package redisstore_test

import (
	"context"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/go-waitingroom/waitingroom/store"
	"github.com/go-waitingroom/waitingroom/store/redisstore"
)

func Example() {
	// Any redis.UniversalClient works: NewClient, NewClusterClient,
	// NewFailoverClient (Sentinel) or NewUniversalClient.
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close() // the Store never closes the client

	s := redisstore.New(client, redisstore.Options{KeyPrefix: "myapp:room:"})
	defer s.Close()

	// Normally package waitingroom calls Update; fn may run more than once.
	err := s.Update(context.Background(), "checkout", func(st *store.State) error {
		st.Version++
		return nil
	})
	if err != nil {
		log.Print(err)
	}
}
