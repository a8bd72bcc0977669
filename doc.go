// Package waitingroom puts a virtual waiting room in front of any net/http
// handler.
//
// When demand spikes (a ticket drop, a vaccine sign-up, a product launch),
// the room lets in only as many visitors as the application can serve, by
// two limits: TotalActiveUsers (visitors active at once) and
// NewUsersPerMinute (visitors let in per minute). Everyone else waits on a
// page that refreshes itself until a slot is theirs, first-in-first-out or
// by random draw, with an honest estimate of the wait.
//
// Quick start (the package's Example is the complete program):
//
//	keys, err := waitingroom.ParseKeys(os.Getenv("WAITINGROOM_KEY")) // openssl rand -hex 32; the same on every instance
//	if err != nil {
//		log.Fatal(err)
//	}
//	room, err := waitingroom.New(waitingroom.Config{
//		Name:     "launch",
//		Settings: waitingroom.Settings{TotalActiveUsers: 200, NewUsersPerMinute: 200},
//		Keys:     keys,
//	}, memstore.New())
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer room.Close()
//	if err := room.Ready(ctx); err != nil { // a store that is down or misconfigured fails the start
//		log.Fatal(err)
//	}
//	http.ListenAndServe(":8080", room.Handler(app))
//
// # How it works
//
// A visitor's place in the queue is the second of their first request,
// kept in an encrypted, authenticated cookie (XChaCha20-Poly1305) with
// their random identity, admission, latest check-in and refresh. The
// shared state holds one small record per admitted visitor and counts of
// waiting visitors by arrival second: it grows with the sessions, not with
// the queue. Every copy of a cookie carries the same identity, so parallel
// requests, a replayed cookie or one cookie on many machines count as one
// visitor, a place yields one admission, and a revoke subtracts once.
//
// Every SyncInterval each instance syncs with the store in one atomic
// read-modify-write: it merges its counts and takes a grant, a share of
// the free slots. Between syncs every decision is local, so a request
// never waits on the store, and the limits hold exactly across any number
// of instances. docs/design.md in the repository is the map.
//
// FIFO reserves free slots for the oldest arrivals first; random draws who
// may take them, and switching between the two keeps the arrival seconds.
// A waiting visitor gets a new chance only when the one their page
// announced is due (a jittered refresh, or in FIFO when their turn is
// expected, if sooner), whichever copy of their cookie asks: refreshing
// faster gains nothing.
//
// # Stores
//
// memstore keeps the state in process (one process). redisstore and
// sqlstore keep it in Redis, PostgreSQL, MySQL/MariaDB or SQLite so that
// many processes share one queue. storetest is the conformance suite.
//
// # One way in
//
// Room.Handler is the only way to put the room in front of an
// application; everything else is built on it: the gin adapter (wrgin),
// the Caddy module (wrcaddy) and the forward-auth handler that answers
// nginx, Caddy, Traefik, Envoy or ingress-nginx (package forwardauth). So
// a visitor is decided on, and a session revoked (Revoke, or the response
// header CommandHeader), the same way behind each of them.
package waitingroom
