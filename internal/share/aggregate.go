package share

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-waitingroom/waitingroom/store"
)

// The aggregator's round (fleet.go): once an interval, the instance that
// holds the fleet's lease reads every fleet instance's mailbox, applies
// their batches and carves their grants in one Update of the shared state
// (applyRound), writes each grant to its mailbox and publishes the view.

// round is one round of the aggregator: what it read, and what its
// Update of the shared state decided.
type round struct {
	term    uint64
	peers   []string                  // the fleet's instances and those joining, in order
	joiners []string                  // those named in the join records, in the order they joined
	joining map[string]bool           // the same, as a set
	byID    map[string]*store.Mailbox // the mailboxes read, by instance

	// What the round's Update decided (set again at each try).
	lost     bool // the lease is another instance's: nothing written
	wentBack bool // the state went back since the latest round
	out      map[string]carved
	version  uint64
	epoch    uint64
	pub      store.State
	merged   *View
	dropped  []string
	back     map[string]goneBack
}

// carved is a round's grant for one instance.
type carved struct {
	g       Grant
	base    uint64
	applied uint64
	fair    int64
	scarce  bool
}

// aggregate runs one round of the aggregator: every fleet instance's
// mailbox read (and fenced with this lease's term), their new batches
// applied and their grants carved in one Update of the shared state, the
// grants written to the mailboxes, the view published. It reports lost
// when the lease turned out to be another instance's.
func (s *Syncer[S]) aggregate(sctx context.Context) (lost bool, err error) {
	ctx, cancel := roundContext(sctx, s.cfg.SyncInterval)
	defer cancel()
	r := s.readMailboxes(ctx)
	wrote, err := s.update(ctx, s.cfg.Name, func(st *store.State) bool { return s.applyMailboxes(st, r) })
	switch {
	case err == nil && r.lost:
		s.steadySince = -1 // as after a round that failed (see Syncer.steadySince)
		return true, nil
	case err != nil:
		s.steadySince = -1
		return false, fmt.Errorf("waitingroom: aggregator round: %w", err)
	case !wrote:
		return false, nil // nobody had news: nothing written
	}
	s.roundCommitted(ctx, r)
	s.deliver(ctx, r)
	return false, s.publish(ctx, r.pub)
}

// roundContext is the context of a round of the sync whose context is
// sctx: the round may take longer than an instance's sync (a wave of
// classic syncs, a fleet starting, contends for the state), and ends with
// the sync's context when that is cancelled (Close).
func roundContext(sctx context.Context, interval time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(sctx), 2*SyncTimeout(max(interval, time.Second)))
	stop := context.AfterFunc(sctx, func() {
		if errors.Is(sctx.Err(), context.Canceled) {
			cancel()
		}
	})
	return ctx, func() {
		stop()
		cancel()
	}
}

// readMailboxes reads the mailbox of every fleet instance and of those
// named in the join records, stamping each with the round's term: a
// mailbox a later term stamped is not read (that term's aggregator is the
// fleet's now).
func (s *Syncer[S]) readMailboxes(ctx context.Context) *round {
	f := &s.fleet
	r := &round{term: f.term}
	r.joiners = s.joiners(ctx, f.peers)
	r.joining = make(map[string]bool, len(r.joiners))
	for _, id := range r.joiners {
		r.joining[id] = true
	}
	r.peers = append(slices.Clone(f.peers), r.joiners...)
	boxes := make([]*store.Mailbox, len(r.peers))
	s.eachPeer(r.peers, func(i int) {
		_, _ = s.update(ctx, MailboxKey(s.cfg.Name, r.peers[i]), func(st *store.State) bool {
			if st.Epoch == 0 {
				// No mailbox: one the store lost (emptied, restarted
				// without its data). Stamping it would recreate it, and
				// its instance would not find it lost at its next write
				// (mailboxWrite.lost), going on through a fleet whose
				// state is gone until its patience ran out.
				return false
			}
			mb := mailboxOf(st)
			if mb.Term > r.term {
				return false // a later term's
			}
			boxes[i] = &mb
			if mb.Term == r.term {
				return false
			}
			mb.Term = r.term
			writeMailbox(st, mb)
			return true
		})
	})
	r.byID = make(map[string]*store.Mailbox, len(r.peers))
	for i, mb := range boxes {
		if mb != nil {
			r.byID[r.peers[i]] = mb
		}
	}
	return r
}

// applyMailboxes is the round's Update of the shared state st: checked to
// still hold the lease, it keeps the fleet's records alive from their
// mailboxes, finds what a state that went back lacks, and applies every
// instance's news at once (applyRound). It reports whether st is to be
// written: not when the lease is another's (r.lost) or nobody had news.
func (s *Syncer[S]) applyMailboxes(st *store.State, r *round) bool {
	r.out, r.merged, r.lost, r.dropped = map[string]carved{}, nil, false, nil
	local := s.LocalNow()
	now := min(max(st.Clock, local+s.offset.Load()), local+MaxClockLead)
	lease := st.Lease
	if lease == nil || lease.Holder != s.cfg.ID || lease.Term != r.term || st.Epoch != s.epoch.Load() {
		r.lost = true
		return false
	}
	lease.Renewed = now
	r.wentBack = s.versionPast(st, r)
	st.Version++
	st.Clock = now
	_, rules := s.settle(st, now)
	keepAlive(st, r.byID, now)
	unrecorded := s.findGoneBack(st, r, now)
	members, ds := s.roundMembers(st, r, unrecorded, now)
	if len(members) == 0 {
		return false // nobody had news: nothing to write
	}
	p := s.params(now)
	p.id, p.round = "", true
	p.keepSilent = r.wentBack || s.keepSilent(local)
	p.reserved = s.fleet.reserved
	p.rules = rules
	keepSeeds(st, now, p.revealAfter(), s.cfg.Seed, p.rules.Shuffles)
	cs, v := applyRound(st, p, members, ds)
	for i, m := range members {
		r.out[m.id] = carved{g: cs[i].g, base: m.seq, applied: m.seq, fair: cs[i].fair, scarce: cs[i].scarce}
	}
	r.dropped, r.merged = v.dropped, v
	s.fleet.peers, _ = fleetPeers(st, s.cfg.ID)
	if len(s.fleet.peers) < s.cfg.FleetMin/2 {
		// The fleet shrank to half the size that takes a lease: the
		// lease ends, every instance falls back to classic syncs.
		st.Lease = nil
	}
	r.version, r.epoch = st.Version, st.Epoch
	r.pub = viewOf(st, len(s.fleet.peers))
	return true
}

// versionPast reports whether st went back since this aggregator's
// latest round (a failover, a restart from an older dump: the mailboxes
// did too), or below a grant a mailbox holds; and takes st's Version past
// the newest grant carved, so that every grant this round carves is newer
// than any in a mailbox (the mailboxes take none older than theirs).
func (s *Syncer[S]) versionPast(st *store.State, r *round) bool {
	wentBack := st.Version < s.fleet.roundVersion
	for _, mb := range r.byID {
		if mb.Epoch == st.Epoch {
			wentBack = wentBack || st.Version < max(mb.Version, mb.Adopted)
			st.Version = max(st.Version, mb.Version, mb.Adopted)
		}
	}
	return wentBack
}

// keepAlive keeps the records of the fleet's instances alive from their
// mailboxes (byID): an instance is alive while it writes its mailbox, and
// its record is kept until its mailbox is older than the TTL, however
// long the rounds take.
func keepAlive(st *store.State, byID map[string]*store.Mailbox, now int64) {
	for i := range st.Instances {
		in := &st.Instances[i]
		if mb := byID[in.ID]; mb != nil {
			in.Seen = max(in.Seen, min(mb.Seen, now))
		}
	}
}

// findGoneBack finds the instances a state that went back lacks batches
// of, to be told so (r.back), and sets the grace; it returns the live
// instances of this epoch that the state has no record of although their
// batches were applied, to be brought in again.
//
// A state whose record of an instance is behind the batches its mailbox
// says were applied went back (the store lost writes it had
// acknowledged): that instance is told to send again what the state
// lacks, and nobody is granted a slot until every instance has had the
// time to (the grace, as a classic sync that finds the state went back
// sets it). A live instance of this epoch that the state has no record of
// although its batches were applied, and that did not stop writing its
// mailbox for an instance TTL (it cannot have been dropped as silent),
// went back the same way (to before it joined, or to a version a later
// sync dropped it from as silent): it is brought in again. One that did
// stop is brought in as it names itself again, as a joining instance.
func (s *Syncer[S]) findGoneBack(st *store.State, r *round, now int64) (unrecorded []string) {
	ttl := s.instanceTTL()
	r.back = maps.Clone(s.fleet.back)
	lacks := func(id string, had, upto uint64) {
		if b, ok := r.back[id]; ok {
			had, upto = min(b.had, had), max(b.upto, upto)
		}
		if r.back == nil {
			r.back = map[string]goneBack{}
		}
		r.back[id] = goneBack{had: had, upto: upto}
		st.Grace = max(st.Grace, now+s.graceAfterGap())
	}
	recorded := make(map[string]bool, len(st.Instances))
	for _, in := range st.Instances {
		recorded[in.ID] = true
		if mb := r.byID[in.ID]; mb != nil && !mb.Left && in.Seq < mb.Acked && mb.Seen+ttl >= now {
			lacks(in.ID, in.Seq, mb.Acked)
		}
	}
	for _, id := range r.peers {
		// One this aggregator dropped as silent itself was silent,
		// though it wrote again since (a write that committed late,
		// after a round read its mailbox): it joins again.
		_, silent := s.gone[id]
		if mb := r.byID[id]; mb != nil && !mb.Left && !recorded[id] && !silent && mb.In == st.Epoch && mb.Acked > 0 && mb.Seen+ttl >= now &&
			mb.Prev != 0 && mb.Seen-mb.Prev <= ttl {
			lacks(id, 0, mb.Acked)
			unrecorded = append(unrecorded, id)
		}
	}
	return unrecorded
}

// roundMembers returns the instances whose news the round applies (in
// the state's order, then those joining and those brought in again), and
// their news: every instance's is merged into the state at once, then
// each is carved a grant (applyRound), one pass over the state whatever
// the fleet's size.
func (s *Syncer[S]) roundMembers(st *store.State, r *round, unrecorded []string, now int64) ([]member, []*delta) {
	ids := make([]string, 0, len(st.Instances)+len(r.joiners))
	present := make(map[string]bool, len(st.Instances))
	applied := make(map[string]uint64, len(st.Instances))
	for _, in := range st.Instances {
		ids = append(ids, in.ID)
		present[in.ID] = true
		applied[in.ID] = in.Seq
	}
	for _, id := range append(slices.Clone(r.joiners), unrecorded...) {
		if !present[id] {
			ids = append(ids, id)
		}
	}
	var members []member
	var ds []*delta
	for _, id := range ids {
		m, d, ok := s.memberOf(st, r, id, present[id], applied[id], slices.Contains(unrecorded, id), now)
		if ok {
			members, ds = append(members, m), append(ds, d)
		}
	}
	return members, ds
}

// memberOf returns instance id as a member of the round, with its news
// (ok false: it has none the round applies). present reports that the
// state has its record, applied the latest of its batches the record
// says were applied; unrecorded, that it is one the state went back on
// (findGoneBack).
func (s *Syncer[S]) memberOf(st *store.State, r *round, id string, present bool, applied uint64, unrecorded bool, now int64) (member, *delta, bool) {
	mb := r.byID[id]
	switch {
	case mb != nil && mb.Left:
		// Closing: its last batch is applied if it was not, and its
		// record removed, however long ago it wrote.
		if !present || mb.In != st.Epoch {
			return member{}, nil, false
		}
		return member{id: id, seq: max(mb.Seq, applied), leaving: true}, newsOf(mb, applied), true
	case mb == nil || mb.Seen+s.instanceTTL() < now:
		return member{}, nil, false // an instance in classic syncs, or gone
	case !present && (mb.In != st.Epoch || !r.joining[id] && !unrecorded):
		// Not in the state: it joins through its mailbox, and only the
		// state it joined (another's counts were counted in a state that
		// is lost; it rebuilds that with a classic sync).
		return member{}, nil, false
	case mb.Seq <= applied:
		return member{}, nil, false // no news, or a classic sync applied it
	}
	d := newsOf(mb, applied)
	// A grant carved and not adopted yet counts as held. One carved from
	// an earlier write than the latest (it reached the mailbox after the
	// instance wrote again) is the instance's to adopt at its next write,
	// charged with every admission since that earlier write: this round
	// carves nothing for it. A grant carved now would be charged only from
	// the latest write, and the admissions in between, which the state
	// counts from this round on, would be counted twice as held and once
	// as admitted, and admitted again from the new grant (31 in a minute
	// of 30, at the start of a surge).
	held := mb.Held
	pending := pendingGrant(mb)
	if pending != nil {
		held = max(held, pending.Total())
	}
	m := member{id: id, seq: mb.Seq, held: held, attempts: d.attempts, noCarve: pending != nil && mb.Base < mb.Seq}
	return m, d, true
}

// newsOf is the news of mailbox mb: its batches after applied.
func newsOf(mb *store.Mailbox, applied uint64) *delta {
	d := newDelta()
	for i := range mb.Batches {
		if mb.Batches[i].Seq > applied {
			d.add(batchDelta(&mb.Batches[i]))
		}
	}
	return d
}

// roundCommitted notes what a round that committed learnt: whether the
// state had gone back, its Version and reserve, the kept history's
// minutes, the mailboxes of the instances it dropped.
func (s *Syncer[S]) roundCommitted(ctx context.Context, r *round) {
	f := &s.fleet
	if r.wentBack {
		s.steadySince = s.LocalNow()
	}
	f.roundVersion = r.version
	f.reserved = 0
	if r.pub.Reserve != nil {
		f.reserved = r.pub.Reserve.Upto
	}
	s.afterSync(ctx, r.merged)
	for id := range r.out {
		delete(s.gone, id) // in the state again: not gone
	}
	s.noteGone(r.dropped)
}

// deliver writes the round's grants to the mailboxes, where no later term
// read them and no newer grant is, and tells the instances the state went
// back on so; those whose mailbox is not written are told at the next
// round.
func (s *Syncer[S]) deliver(ctx context.Context, r *round) {
	f := &s.fleet
	var backMu sync.Mutex
	f.back = maps.Clone(r.back)
	s.eachPeer(r.peers, func(i int) {
		id := r.peers[i]
		c, ok := r.out[id]
		if !ok {
			return
		}
		b, isBack := r.back[id]
		wrote, _ := s.update(ctx, MailboxKey(s.cfg.Name, id), func(st *store.State) bool {
			return deliverTo(st, r, c, b, isBack)
		})
		if wrote && isBack {
			backMu.Lock()
			delete(f.back, id)
			backMu.Unlock()
		}
	})
}

// deliverTo writes c, the grant a round carved, into the mailbox st,
// with what the state lacks of the instance's batches (b, if isBack). It
// reports false, writing nothing, when a later term read the mailbox or a
// newer grant is in it.
func deliverTo(st *store.State, r *round, c carved, b goneBack, isBack bool) bool {
	mb := mailboxOf(st)
	if mb.Term != r.term || mb.Version >= r.version {
		return false
	}
	if isBack {
		if mb.Back {
			b = goneBack{had: min(b.had, mb.Had), upto: max(b.upto, mb.Upto)}
		}
		mb.Back, mb.Had, mb.Upto = true, b.had, b.upto
	}
	mb.Acked = max(mb.Acked, c.applied)
	if c.g != nil {
		mb.Grant = make([]store.Count, 0, len(c.g))
		for _, e := range c.g {
			mb.Grant = append(mb.Grant, store.Count{Key: e.Bucket, N: e.N})
		}
		mb.Version, mb.Base, mb.Epoch, mb.Fair, mb.Scarce = r.version, c.base, r.epoch, c.fair, c.scarce
	}
	writeMailbox(st, mb)
	return true
}

// joiners returns the instances named in the room's join records and not
// among known (the fleet instances in the state), and empties the records
// of those that are known or gone: an instance stays named until a round
// has brought it into the state, and a round that fails loses nobody.
func (s *Syncer[S]) joiners(ctx context.Context, known []string) []string {
	in := make(map[string]bool, len(known))
	for _, id := range known {
		in[id] = true
	}
	now := s.Now()
	ttl := s.instanceTTL()
	keys := make([]string, joinShards)
	for i := range keys {
		keys[i] = joinShard(s.cfg.Name, i)
	}
	var (
		mu  sync.Mutex
		all []store.Instance
	)
	s.eachPeer(keys, func(i int) {
		var named []store.Instance
		_, err := s.update(ctx, keys[i], func(st *store.State) bool {
			n := len(st.Instances)
			st.Instances = slices.DeleteFunc(st.Instances, func(x store.Instance) bool {
				return in[x.ID] || x.Seen+ttl < now
			})
			named = slices.Clone(st.Instances)
			if len(st.Instances) == n {
				return false
			}
			st.Version++
			return true
		})
		if err == nil {
			mu.Lock()
			all = append(all, named...)
			mu.Unlock()
		}
	})
	// In the order they joined, as classic syncs would have brought them.
	slices.SortFunc(all, func(a, b store.Instance) int { return cmp.Or(cmp.Compare(a.Seen, b.Seen), strings.Compare(a.ID, b.ID)) })
	out := make([]string, 0, len(all))
	for _, x := range all {
		if !in[x.ID] {
			in[x.ID] = true // named in two records: once
			out = append(out, x.ID)
		}
	}
	return out
}

// eachPeer calls fn for every index of peers, fleetWorkers at a time.
func (s *Syncer[S]) eachPeer(peers []string, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(fleetWorkers, len(peers)) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range peers {
		next <- i
	}
	close(next)
	wg.Wait()
}
