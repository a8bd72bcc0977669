package share

import (
	"context"
	"maps"
	"slices"
	"strconv"

	"github.com/go-waitingroom/waitingroom/lottery"
	"github.com/go-waitingroom/waitingroom/store"
)

// The list of an event's shuffle (docs/lottery.md): the places of the
// visitors seen in its pre-queue, published with the record of its
// period so that each can check their rank. The room's state holds no
// identities of waiting visitors, so the list is a state of its own
// (PlacesKey): from the event's start, each instance's sync adds the
// places of the pre-queued visitors it saw that the list lacks, as far as
// it knows the list (the copy its latest write brought back). A visitor
// seen only before the start is written at the start, one seen later at
// the sync after; each instance writes its visitors at most once. An
// event that shuffles under two periods (one added once the hour its
// start falls in was committed: the rest of its pre-queue is shuffled
// again under its own period from that hour's end) has a list for each:
// a visitor goes in the list of the period their place was drawn under
// when they were seen, that of the start's interval for one seen before.

// maxListing bounds the identities an instance keeps for the list between
// two writes (before the event's start, all it saw in the pre-queue).
const maxListing = 1 << 20

// listing is what an instance saw of the pre-queue of the event that
// starts at start (Unix seconds) and has not written yet: the
// identities, by the start of the lottery period their place is drawn
// under (n in all).
type listing struct {
	start int64
	ids   map[int64]map[uint64]struct{}
	n     int
}

// Prequeued notes that visitor id, of the pre-queue of the event that
// shuffles it at start (Unix seconds), came back with their cookie: their
// place under the seed of the lottery period that begins at period (Unix
// seconds) goes in that period's list of the shuffle (PlacesKey).
func (l *Local) Prequeued(id uint64, start, period int64) {
	if l.listing.start != start || l.listing.ids == nil {
		l.listing = listing{start: start, ids: map[int64]map[uint64]struct{}{}}
	}
	if l.listing.n >= maxListing {
		return
	}
	ids := l.listing.ids[period]
	if ids == nil {
		ids = map[uint64]struct{}{}
		l.listing.ids[period] = ids
	}
	if _, ok := ids[id]; !ok {
		ids[id] = struct{}{}
		l.listing.n++
	}
}

// PlacesKey is the store key of the list of the shuffle whose lottery
// period starts at start (Unix seconds).
func PlacesKey(room string, start int64) string {
	return room + "#places:" + strconv.FormatInt(start, 10)
}

// place is lottery.Place as the list holds it: times 2^53, exact.
func place(seed lottery.Seed, id uint64) uint64 {
	return uint64(lottery.Place(seed, id) * (1 << 53))
}

// writePlaces adds to the lists of the event whose pre-queue this
// instance saw the places they lack, once the event has started, with
// the seeds of their periods as the view has them. On error the
// identities are kept for the next sync. Under s.mu.
func (s *Syncer[S]) writePlaces(ctx context.Context) {
	now, snap := s.Now(), s.Snapshot()
	l := s.local
	l.mu.Lock()
	lst := l.listing
	if lst.n == 0 || now < lst.start*1000 {
		l.mu.Unlock()
		return
	}
	l.listing.ids, l.listing.n = nil, 0
	l.mu.Unlock()
	for _, period := range slices.Sorted(maps.Keys(lst.ids)) {
		i := slices.IndexFunc(snap.seeds, func(x store.Seed) bool { return x.Start == period })
		if i < 0 {
			continue // the state lost the period's seed: nothing to list under
		}
		if err := s.writeList(ctx, &snap.seeds[i], lst.ids[period]); err != nil {
			s.cfg.Log.Debug("waitingroom: writing the shuffle's list failed; tried again at the next sync", "err", err)
			l.mu.Lock()
			for id := range lst.ids[period] {
				l.Prequeued(id, lst.start, period)
			}
			l.mu.Unlock()
		}
	}
}

// writeList adds to the list of the shuffle under seed x the places of
// ids it lacks, as far as this instance knows it. Under s.mu.
func (s *Syncer[S]) writeList(ctx context.Context, x *store.Seed, ids map[uint64]struct{}) error {
	if s.listed.start != x.Start {
		s.listed.start, s.listed.places = x.Start, nil
	}
	var add []uint64
	for id := range ids {
		if p := place(x.Secret, id); !has(s.listed.places, p) {
			add = append(add, p)
		}
	}
	if len(add) == 0 {
		return nil
	}
	slices.Sort(add)
	var list []uint64
	_, err := s.update(ctx, PlacesKey(s.cfg.Name, x.Start), func(st *store.State) bool {
		list = mergePlaces(st.Places, add)
		if len(list) == len(st.Places) {
			return false
		}
		st.Places = list
		st.Epoch, st.Version = max(st.Epoch, 1), st.Version+1
		return true
	})
	if err == nil {
		s.listed.places = list
	}
	return err
}

// has reports whether the sorted list holds p.
func has(list []uint64, p uint64) bool {
	_, ok := slices.BinarySearch(list, p)
	return ok
}

// mergePlaces returns the union of the sorted lists a and b, sorted,
// each place once.
func mergePlaces(a, b []uint64) []uint64 {
	out := make([]uint64, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		var p uint64
		switch {
		case len(b) == 0 || len(a) > 0 && a[0] < b[0]:
			p, a = a[0], a[1:]
		default:
			p, b = b[0], b[1:]
		}
		if len(out) == 0 || out[len(out)-1] != p {
			out = append(out, p)
		}
	}
	return out
}

// Places returns the list of the shuffle whose lottery period starts at
// start (Unix seconds): the places, times 2^53, in ascending order; none
// for a period that shuffled nothing. It reads the store.
func (s *Syncer[S]) Places(ctx context.Context, start int64) ([]uint64, error) {
	st, err := s.read(ctx, PlacesKey(s.cfg.Name, start))
	return st.Places, err
}
