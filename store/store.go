// Package store defines the shared state of a waiting room and the Store
// interface that keeps it.
//
// A room's shared state holds one small record per admitted visitor (their
// identity, admission, latest request, and whether the session was
// revoked), counts of waiting visitors by arrival bucket and check-in slot,
// admissions by minute, one record per running instance and the live
// settings. Its size grows with the sessions and the minutes of queue, not
// with the number of waiting visitors.
//
// The algorithm that reads and changes the state lives in package
// waitingroom, once. A Store offers exactly one primitive: an atomic
// read-modify-write of one room's state (Update). Package memstore keeps it in
// process memory; redisstore and sqlstore keep it in a server shared by many
// processes. Package storetest is the conformance suite every Store passes.
//
// A store may also keep each room's history, one small record a minute for
// 30 days, apart from the state: the optional HistoryStore interface, which
// every store of this module implements.
//
// # Errors
//
// When an adapter can tell why the store failed, it wraps the driver's error
// with one of ErrNoSchema, ErrAuth or ErrUnavailable and says in the message
// what to do, so that errors.Is tells a misconfiguration from an outage
// while the driver's error stays in the chain. ErrNoSchema and ErrAuth do not
// go away by retrying: someone has to create the table or fix the
// credentials. ErrUnavailable may end by itself.
//
// This package depends on the standard library only.
package store

import (
	"context"
	"errors"
)

// ErrClosed is returned by Store methods called after Close.
var ErrClosed = errors.New("waitingroom/store: store is closed")

// Errors that say why a store could not do its work. Stores wrap the error of
// their driver with one of them, together with that error (errors.Is finds
// both), and name the fix in the message. An error that wraps none of them
// was not classified.
var (
	// ErrNoSchema means that the table (or keys) the store keeps its state
	// in do not exist: a misconfiguration, not an outage. For sqlstore,
	// create the table with (*sqlstore.Store).CreateSchema or the statement
	// that sqlstore.Schema returns.
	ErrNoSchema = errors.New("waitingroom/store: no schema")
	// ErrAuth means that the server refused the credentials, or that the
	// user lacks a permission the store needs: a misconfiguration, not an
	// outage. Check the user, password and grants (Redis: the ACL).
	ErrAuth = errors.New("waitingroom/store: access denied")
	// ErrUnavailable means that the server could not be reached or did not
	// answer in time (connection refused or reset, a timeout, a deadline
	// that passed): an outage, which may end by itself. A context cancelled
	// by the caller is not one.
	ErrUnavailable = errors.New("waitingroom/store: unavailable")
)

// Store keeps the shared state of waiting rooms.
//
// Implementations must be safe for concurrent use by many goroutines and,
// for stores shared between processes, by many processes at once.
type Store interface {
	// Update atomically reads the state of the named room, calls fn with it
	// and stores the state fn leaves behind.
	//
	// Atomicity: no other Update of the same room, from this process or any
	// other sharing the store, is applied between the read fn sees and the
	// write of its result; concurrent updates are linearizable and none is
	// lost. Stores that use optimistic concurrency may call fn more than
	// once, each time with a freshly read state, so fn must have no side
	// effects beyond the *State it is given.
	//
	// Not found: a room that has no state yet, whose state expired, or whose
	// stored value cannot be decoded is presented to fn as a zero State
	// (Epoch 0). That is not an error. A state of another encoding version
	// (another release's) is: Update returns an error wrapping ErrVersion
	// without calling fn (Decode).
	//
	// Errors: if fn returns an error, nothing is written and Update returns
	// fn's error unchanged. Any other error means the store could not be
	// reached or the write could not be committed; the state is then as it
	// was before the call. Such errors wrap ErrNoSchema, ErrAuth or
	// ErrUnavailable when the store can tell which it is. Update honours
	// ctx's deadline and cancellation.
	//
	// Removal: a state that is not found and the zero State are the same to
	// every reader, so a store may remove a room's state when fn leaves the
	// zero State (memstore and sqlstore do; redisstore writes it, and it
	// expires).
	Update(ctx context.Context, room string, fn func(*State) error) error

	// Close releases the store's resources. Clients passed in by the caller
	// (a Redis client, a *sql.DB) are not closed: their owner closes them.
	// Methods called after Close return ErrClosed. Close is idempotent.
	Close() error
}

// Reader is implemented by stores that can read a room's state without
// taking the lock (or running the transaction) that Update takes, so that
// many readers of one room neither wait for each other nor hold up its
// writers. It is optional: package waitingroom reads through Update, with
// a function that fails, when a store does not implement it. Every store
// of this module implements it; storetest checks it.
type Reader interface {
	// Read returns the state of the named room as some committed Update
	// left it, whole: never a part of one write and a part of another,
	// never the state of an Update that failed or is still running. It
	// sees every Update that returned before Read was called, from any
	// client of the store, and once it has returned a state, no later Read
	// of the same client returns an older one.
	//
	// Not found: a room that has no state, whose state expired or was
	// removed, or whose stored value cannot be decoded is returned as a
	// zero State (Epoch 0), not as an error; a state of another encoding
	// version is an error wrapping ErrVersion, as for Update.
	//
	// The caller owns the State returned: changing it changes nothing in
	// the store. Errors are those of Update, classified the same way
	// (ErrNoSchema, ErrAuth, ErrUnavailable; ErrClosed after Close); ctx's
	// deadline and cancellation are honoured. Read is safe for concurrent
	// use.
	Read(ctx context.Context, room string) (*State, error)
}
