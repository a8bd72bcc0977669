package share

import (
	"cmp"
	"context"
	"hash/fnv"
	"slices"
	"strconv"

	"github.com/go-waitingroom/waitingroom/store"
)

// A fleet instance's mailbox (fleet.go): its own state in the store, in
// which it leaves its numbered batches and what it holds, and from which it
// takes the grant the aggregator carved for it.

// MailboxKey is the store key of the mailbox of instance id in room.
func MailboxKey(room, id string) string { return room + "#fleet:" + id }

// ViewKey is the store key of the fleet's view of room.
func ViewKey(room string) string { return room + "#fleet-view" }

// joinKey is the name of the join record id names itself in: one of
// joinShards, so that a fleet starting at once does not contend for one.
func joinKey(room, id string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return joinShard(room, int(h.Sum32()%joinShards))
}

func joinShard(room string, i int) string { return room + "#fleet-join:" + strconv.Itoa(i) }

// joinShards is how many join records a room has; the aggregator reads
// them all every round.
const joinShards = 16

// mailboxOf returns a copy of the mailbox in st (the zero Mailbox for
// none), for an Update of it to change and write.
func mailboxOf(st *store.State) store.Mailbox {
	if st.Mailbox == nil {
		return store.Mailbox{}
	}
	return *st.Mailbox
}

// writeMailbox leaves mb in st, the state of a mailbox.
func writeMailbox(st *store.State, mb store.Mailbox) {
	st.Mailbox = &mb
	st.Version++
	if st.Epoch == 0 {
		st.Epoch = 1
	}
}

// pendingGrant reports the grant carved for the mailbox's instance and
// not adopted, if any.
func pendingGrant(mb *store.Mailbox) Grant {
	if mb.Version <= mb.Adopted || mb.Grant == nil {
		return nil
	}
	g := make(Grant, len(mb.Grant))
	for i, e := range mb.Grant {
		g[i] = GrantEntry{Bucket: e.Key, N: e.N}
	}
	return g
}

// toBatch is b as a mailbox carries it.
func toBatch(b batch) store.Batch {
	w := store.Batch{Seq: b.seq, Attempts: b.d.attempts}
	for _, x := range b.d.sessions {
		w.Sessions = append(w.Sessions, x)
	}
	slices.SortFunc(w.Sessions, func(x, y store.Session) int { return cmp.Compare(x.ID, y.ID) })
	for k, n := range b.d.waiting {
		if n != 0 {
			w.Waiting = append(w.Waiting, store.Cell{Bucket: k.bucket, Slot: k.slot, N: n})
		}
	}
	for id, ms := range b.d.waits {
		w.Waits = append(w.Waits, store.Count{Key: int64(id), N: ms})
	}
	for id, a := range b.d.asks {
		w.Asks = append(w.Asks, store.Ask{Visitor: id, Bucket: a.bucket, At: a.at})
	}
	return w
}

// batchDelta is the delta of a mailbox's batch.
func batchDelta(w *store.Batch) *delta {
	d := newDelta()
	for _, x := range w.Sessions {
		d.session(x)
	}
	for _, c := range w.Waiting {
		d.waiting[cellKey{c.Bucket, c.Slot}] += c.N
	}
	for _, x := range w.Waits {
		d.wait(uint64(x.Key), x.N)
	}
	for _, a := range w.Asks {
		d.ask(a.Visitor, a.Bucket, a.At)
	}
	d.attempts = w.Attempts
	return d
}

// nameSelf names this instance in its join record, at now.
func (s *Syncer[S]) nameSelf(ctx context.Context, now int64) error {
	return s.cfg.Store.Update(ctx, joinKey(s.cfg.Name, s.cfg.ID), func(st *store.State) error {
		st.Instances = slices.DeleteFunc(st.Instances, func(in store.Instance) bool {
			return in.ID == s.cfg.ID || in.Seen+s.instanceTTL() < now
		})
		st.Instances = append(st.Instances, store.Instance{ID: s.cfg.ID, Seen: now})
		st.Version++
		if st.Epoch == 0 {
			st.Epoch = 1
		}
		return nil
	})
}

// noteGone remembers the mailboxes of the fleet instances that a sync of
// this instance dropped from the state (silent for the instance TTL), to
// remove them once they have been silent for the fleet's patience: an
// instance that comes back before that still reads its mailbox (which of
// its batches were applied). Under s.mu.
func (s *Syncer[S]) noteGone(ids []string) {
	if len(ids) == 0 {
		return
	}
	if s.gone == nil {
		s.gone = map[string]int64{}
	}
	due := s.LocalNow() + s.fleetPatience() - s.instanceTTL()
	for _, id := range ids {
		if len(s.gone) >= maxGone {
			s.cfg.Log.Debug("waitingroom: too many fleet mailboxes to remove; some stay", "max", maxGone)
			return
		}
		if _, ok := s.gone[id]; !ok {
			s.gone[id] = due
		}
	}
}

// removeMailboxes removes the mailboxes noted gone whose time has come,
// each with an Update that leaves the zero State (sqlstore and memstore
// delete it; Redis lets it expire) if it has been silent for the fleet's
// patience; one written since is tried again once it has been. A
// mailbox whose Update fails is tried at the next sync; at most
// maxRemovals a sync. Under s.mu.
func (s *Syncer[S]) removeMailboxes(ctx context.Context) {
	local := s.LocalNow()
	var due []string
	for id, at := range s.gone {
		if at <= local && len(due) < maxRemovals {
			due = append(due, id)
		}
	}
	now := local + s.offset.Load()
	patience := s.fleetPatience()
	for _, id := range due {
		next := int64(0) // done
		_, err := s.update(ctx, MailboxKey(s.cfg.Name, id), func(st *store.State) bool {
			next = 0
			if st.Epoch == 0 {
				return false // no mailbox
			}
			if mb := mailboxOf(st); mb.Seen+patience >= now {
				next = local + mb.Seen + patience - now + 1
				return false // written since: not yet
			}
			*st = store.State{}
			return true
		})
		if err != nil {
			next = local
		}
		if next == 0 {
			delete(s.gone, id)
		} else {
			s.gone[id] = next
		}
	}
}

// maxGone bounds the mailboxes an instance remembers to remove.
const maxGone = 4096

// maxRemovals bounds the mailboxes one sync removes, one after the other:
// the rest wait for the next syncs.
const maxRemovals = 16
