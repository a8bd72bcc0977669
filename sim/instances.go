package sim

import (
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/hook"
	"github.com/go-waitingroom/waitingroom/store"
)

// simKey encrypts the visitors' cookies. A simulation has nothing to keep
// secret; every instance of a run needs the same key.
var simKey = []byte("waitingroom simulation key, 32+ bytes long")

// startRooms makes the run's instances on its store, each on the virtual
// clock with its own seeded randomness and without a sync loop of its own,
// and returns the Config of the last one, as Configure left it. Those made
// before an error are left for close.
func (r *run) startRooms() (waitingroom.Config, error) {
	o := r.o
	now := func() time.Time { return time.UnixMilli(r.base + r.now) }
	var cfg waitingroom.Config
	for i := range o.Instances {
		cfg = waitingroom.Config{
			Name: o.Name,
			Settings: waitingroom.Settings{
				TotalActiveUsers:  o.TotalActiveUsers,
				NewUsersPerMinute: o.NewUsersPerMinute,
				SessionDuration:   o.SessionDuration,
				QueueingMethod:    o.Method,
			},
			RefreshInterval: o.RefreshInterval,
		}
		if o.Configure != nil {
			o.Configure(&cfg)
		}
		if len(cfg.Keys) == 0 {
			cfg.Keys = [][]byte{simKey}
		}
		if cfg.Logger == nil {
			cfg.Logger = o.Logger
		}
		cfg.Now = now
		cfg.Random = mrand.New(mrand.NewPCG(o.Seed, uint64(i)+1)).Float64
		// Identities too: random admission on several instances draws by
		// them.
		cfg.Identities = mrand.New(mrand.NewPCG(o.Seed^0x1d, uint64(i)+1)).Uint64
		cfg.SyncInterval = -1
		// And their IDs, which order a fleet's instances.
		hook.InstanceID(&cfg, func() string { return fmt.Sprintf("sim%04d", i) })
		rm, err := waitingroom.New(cfg, r.st)
		if err != nil {
			return cfg, fmt.Errorf("sim: %w", err)
		}
		r.rooms = append(r.rooms, rm)
		r.handlers = append(r.handlers, rm.Handler(http.HandlerFunc(r.app)))
		r.order = append(r.order, i)
	}
	return cfg, nil
}

// close closes the instances, and the store if the run opened it.
func (r *run) close() {
	for _, rm := range r.rooms {
		_ = rm.Close()
	}
	if r.ownStore {
		_ = r.st.Close()
	}
}

var errDryRun = errors.New("sim: measuring the state, not changing it")

// sync syncs every instance, in random order, at the instant of the next
// sync, then compares the room's count of waiting visitors with the
// visitors really waiting. Like the rooms' own background loop, syncs come
// every SyncInterval ± 10 %.
func (r *run) sync() error {
	at := r.nextSync
	r.now = at
	r.rng.Shuffle(len(r.order), func(i, j int) { r.order[i], r.order[j] = r.order[j], r.order[i] })
	for _, i := range r.order {
		if err := r.rooms[i].Sync(r.ctx); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
	}
	// After the last sync every instance's counts are merged.
	counted := r.rooms[r.order[len(r.order)-1]].Stats().Waiting
	ghosts := counted - r.waiting
	if ghosts < 0 {
		r.undercount = max(r.undercount, -ghosts)
	} else if g := min(ghosts, len(r.abandoned)); g > 0 {
		// Visitors stop counting in the order they gave up, so the g
		// still counted are the latest g who gave up.
		r.ghostMax = max(r.ghostMax, at-r.abandoned[len(r.abandoned)-g])
		r.ghostSum += float64(g) * float64(at-r.lastSync) / 1000
	}
	if m := at / 60_000; m >= r.stateMinute {
		r.stateMinute = m + 1
		err := r.st.Update(r.ctx, r.o.Name, func(st *store.State) error {
			r.res.StateBytes = max(r.res.StateBytes, len(store.MarshalState(st)))
			return errDryRun
		})
		if err != nil && !errors.Is(err, errDryRun) {
			return fmt.Errorf("sim: %w", err)
		}
	}
	r.lastSync = at
	r.nextSync = at + int64(float64(r.o.SyncInterval.Milliseconds())*(0.9+0.2*r.rng.Float64()))
	return nil
}

// app is the protected application: it answers appStatus and notes the
// request's ticket.
func (r *run) app(w http.ResponseWriter, req *http.Request) {
	t, _ := waitingroom.TicketFrom(w)
	r.ticket = t.ID
	w.WriteHeader(appStatus)
}
