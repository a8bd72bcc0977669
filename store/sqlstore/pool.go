package sqlstore

import (
	"database/sql"
	"runtime"
	"sync"
	"weak"
)

// The connections of the pool ("Connections" in the package
// documentation): the Stores on a *sql.DB count the calls they have in
// flight at once, and raise its MaxIdleConns when that goes above
// database/sql's default and the most so far, so that the connections
// they used at once are not closed as they are released and opened again
// for the next calls. (On PostgreSQL, a connection opened is a server
// process started, and each statement prepared again on it: 25 ms each
// on a loaded machine, where MariaDB's thread took 0.2 ms.)

// defaultIdle is database/sql's MaxIdleConns when it was not set.
const defaultIdle = 2

// pool is what the Stores on one *sql.DB know of its use.
type pool struct {
	mu       sync.Mutex
	inFlight int // the Stores' calls holding (or waiting for) a connection
	peak     int // the most in flight at once so far
}

// pools are the pools of the Stores, by *sql.DB, until it is garbage
// collected.
var pools = struct {
	sync.Mutex
	m map[weak.Pointer[sql.DB]]*pool
}{m: map[weak.Pointer[sql.DB]]*pool{}}

// poolOf returns the pool of db, shared by every Store on it.
func poolOf(db *sql.DB) *pool {
	k := weak.Make(db)
	pools.Lock()
	defer pools.Unlock()
	if p, ok := pools.m[k]; ok {
		return p
	}
	p := &pool{}
	pools.m[k] = p
	runtime.AddCleanup(db, func(k weak.Pointer[sql.DB]) {
		pools.Lock()
		delete(pools.m, k)
		pools.Unlock()
	}, k)
	return p
}

// hold counts a call on db in flight until release is called, raising
// db's MaxIdleConns when the calls in flight outnumber the most so far.
func (p *pool) hold(db *sql.DB) (release func()) {
	p.mu.Lock()
	p.inFlight++
	if n := p.inFlight; n > max(p.peak, defaultIdle) {
		p.peak = n
		if m := db.Stats().MaxOpenConnections; m > 0 {
			n = m // never more open: keep them all
		}
		db.SetMaxIdleConns(n)
	}
	p.mu.Unlock()
	return p.release
}

// release ends a call counted by hold.
func (p *pool) release() {
	p.mu.Lock()
	p.inFlight--
	p.mu.Unlock()
}
