package waitingroom

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-waitingroom/waitingroom/store"
)

// Rolling upgrades. Instances of two releases may share a room while it is
// upgraded, a visitor's requests landing on either, so every instance
// tells the others which formats it reads, and every instance writes the
// newest formats that all the live ones read:
//
//   - an instance's ID (store.Instance.ID) ends in "+s4c3p1": it reads
//     states up to encoding 4 and cookies up to version 3, and takes a
//     pass's records as passes need (pass.go; "+s4c3" is the release
//     before passes, which gives none while it is live; "+s4c2" is
//     the release before challenges, whose cookies do not carry one;
//     "+s3c2" the release before kept history, whose states have no
//     tallies). An ID without
//     a "+" is the previous release's, which reads encoding 2 and
//     version 1 only;
//   - at every sync the instance takes the oldest of what the live
//     instances (those that synced within the instance TTL) read. While
//     any of them is the previous release's, this release writes the
//     state in encoding 2 and cookies in version 1, and counts admitted
//     visitors as that release does (below); otherwise its own formats.
//
// A release reads its own formats and the previous release's, so a room
// is upgraded one release at a time; the next release advertises its own
// numbers, and the change to its formats is as automatic.
//
// The previous release counted active visitors by the second of their
// cookie's latest check-in: an admission adds one at its second, a
// re-issue of the cookie (at most once a minute) moves it to the new
// check-in's second, a revoke takes it away. Such counts have no
// identity: read from a state of encoding 2 they are legacy records
// (store.MinLegacyID), one per visitor counted, which count as active as
// long as the counts would have. While this release writes encoding 2,
// its instances keep those counts as the previous release does, for every
// cookie (that release moves the count of every version 1 cookie it
// re-issues, so each must be counted where it looks for it): session
// records stay with the instance that has them, and are not shared. Once the state is written in encoding 3 again, a cookie of
// version 1 that is still counted by second is converted when it is first
// seen: its ID's record takes the place of one legacy record at its
// check-in's second, and is not a new admission.

// formats are the newest formats an instance reads: the state's encoding
// version and the cookie's version; and pass, 1 when it takes a
// session record seen into the future and ended just after as a revoke
// (Pass, pass.go), else 0.
type formats struct{ state, cookie, pass int }

var (
	// currentFormats are this release's.
	currentFormats = formats{state: store.EncodingVersion, cookie: cookieVersion, pass: 1}
	// previousFormats are the previous release's: what an instance ID
	// without formats reads, and what this release writes while such an
	// instance is live.
	previousFormats = formats{state: store.PreviousEncoding, cookie: 1}
)

// instanceID draws a new instance's ID: random, followed by the formats
// it reads and, for an instance that syncs through an aggregator in a
// large fleet, fleetTag.
func instanceID(fleet bool) string { return instanceIDFrom(randomID, fleet) }

// instanceIDFrom is instanceID with the random part drawn by draw.
func instanceIDFrom(draw func() string, fleet bool) string {
	if fleet {
		return draw() + currentFormats.tag() + fleetTag
	}
	return draw() + currentFormats.tag()
}

// tag is how an instance ID says the formats f: "+s4c3p1".
func (f formats) tag() string {
	t := "+s" + strconv.Itoa(f.state) + "c" + strconv.Itoa(f.cookie)
	if f.pass > 0 {
		t += "p" + strconv.Itoa(f.pass)
	}
	return t
}

// readsOf returns the formats the instance of ID id reads: those after
// the ID's last "+", a letter and a number each ("s" the state, "c" the
// cookie, "p" passes; other letters are formats of later releases, or
// flags such as fleetTag, ignored). An ID
// without formats, or without one of them, is the previous release's.
func readsOf(id string) formats {
	f := previousFormats
	i := strings.LastIndexByte(id, '+')
	if i < 0 {
		return f
	}
	for s := id[i+1:]; s != ""; {
		j := 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if n, err := strconv.Atoi(s[1:j]); err == nil {
			switch s[0] {
			case 's':
				f.state = n
			case 'c':
				f.cookie = n
			case 'p':
				f.pass = n
			}
		}
		s = s[j:]
	}
	return f
}

// writeFormats sets the encoding st is written in: the current one when
// every instance in st.Instances (those live, this one among them) reads
// the current state encoding, store.SessionsEncoding when the oldest of
// them is the release before kept history (which differs from this one
// only by the tallies), else the previous release's. It reports whether
// the formats with identities are written (cookies of version 2 or more
// and sessions by ID), and the cookie version to write: 3 when every
// instance reads it, 2 while one reads only version 2 (the release
// before challenges), 1 with the release before identities; and whether
// passes may be given (every instance takes a pass's records).
func writeFormats(st *store.State) (current bool, cookie int, passes bool) {
	f := currentFormats
	for _, in := range st.Instances {
		r := readsOf(in.ID)
		f.state, f.cookie, f.pass = min(f.state, r.state), min(f.cookie, r.cookie), min(f.pass, r.pass)
	}
	if f.state < store.SessionsEncoding || f.cookie < 2 {
		st.Encoding = store.PreviousEncoding
		return false, 1, false
	}
	if f.state >= currentFormats.state {
		st.Encoding = 0
	} else {
		// The release before kept history: the same formats but for the
		// tallies of the recent minutes, which are not written (history.go).
		st.Encoding = store.SessionsEncoding
	}
	return true, f.cookie, f.pass >= 1
}

// legacyDelta is what a delta changes in the counts of the previous
// release's formats. Its maps are nil until used.
type legacyDelta struct {
	active    map[int64]int64  // Unix second → change of visitors counted there
	admitted  map[int64]int64  // Unix minute → admissions
	converted map[uint64]int64 // visitor ID → Unix second its cookie of version 1 was counted at
}

// count adds n visitors counted at second sec.
func (l *legacyDelta) count(sec, n int64) {
	if l.active == nil {
		l.active = map[int64]int64{}
	}
	l.active[sec] += n
}

// admit counts an admission in minute m.
func (l *legacyDelta) admit(m int64) {
	if l.admitted == nil {
		l.admitted = map[int64]int64{}
	}
	l.admitted[m]++
}

// convert notes that the session of visitor id, reported alongside, was
// counted at second sec by a cookie of version 1. The latest second
// wins: a re-issue moved the count there.
func (l *legacyDelta) convert(id uint64, sec int64) {
	if l.converted == nil {
		l.converted = map[uint64]int64{}
	}
	if old, ok := l.converted[id]; !ok || sec > old {
		l.converted[id] = sec
	}
}

// converts reports whether the report of visitor id converts a count by
// second: a session the state did not have that is no new admission.
func (l *legacyDelta) converts(id uint64) bool {
	_, ok := l.converted[id]
	return ok
}

// add merges o into l.
func (l *legacyDelta) add(o *legacyDelta) {
	for k, n := range o.active {
		l.count(k, n)
	}
	for k, n := range o.admitted {
		if l.admitted == nil {
			l.admitted = map[int64]int64{}
		}
		l.admitted[k] += n
	}
	for id, sec := range o.converted {
		l.convert(id, sec)
	}
}

// applyLegacy applies the counts of d's legacyDelta to st, before d's
// session reports merge: admissions to admitted (by minute), and the
// visitors counted by second to the legacy records, less one at its
// second for each converted session the state does not have yet. The
// legacy records are then one per visitor, ordered by second, with IDs
// from store.MinLegacyID up, as a state of encoding 2 reads.
func applyLegacy(st *store.State, d *delta, admitted map[int64]int64) {
	l := &d.legacy
	for k, n := range l.admitted {
		admitted[k] += n
	}
	if len(l.active) == 0 && len(l.converted) == 0 {
		return
	}
	st.Sessions = mergeSessions(st.Sessions, nil, nil) // sorted, one record per ID
	first, _ := slices.BinarySearchFunc(st.Sessions, store.MinLegacyID, func(x store.Session, id uint64) int { return cmp.Compare(x.ID, id) })
	by := map[int64]int64{}
	for _, x := range st.Sessions[first:] {
		by[x.Seen]++
	}
	for sec, n := range l.active {
		by[sec] = max(by[sec]+n, 0)
	}
	for id, sec := range l.converted {
		if _, known := slices.BinarySearchFunc(st.Sessions[:first], id, func(x store.Session, id uint64) int { return cmp.Compare(x.ID, id) }); !known && by[sec] > 0 {
			by[sec]--
		}
	}
	secs := make([]int64, 0, len(by))
	for sec, n := range by {
		if n > 0 {
			secs = append(secs, sec)
		}
	}
	slices.Sort(secs)
	ss := st.Sessions[:first:first]
	id := uint64(store.MinLegacyID)
	for _, sec := range secs {
		for range by[sec] {
			ss = append(ss, store.Session{ID: id, Admitted: sec, Seen: sec})
			id++
		}
	}
	st.Sessions = ss
}

// The accounting of a request, as the formats written decide (v.current,
// which a request reads once, with the cookie it writes). rm.mu is held
// by the *Locked ones.

// admittedLocked accounts for the admission x: a session record, or a
// visitor counted at its second and an admission in its minute.
func (rm *Room) admittedLocked(v *view, x store.Session) {
	if v.current {
		rm.pending.session(x)
	} else {
		rm.pending.legacy.count(x.Seen, 1)
		rm.pending.legacy.admit(floorDiv(x.Admitted, 60))
	}
	rm.noteLocked(x)
}

// joinedLocked accounts for the holder of a waiting cookie who joins the
// session x its place became: a sign of life of the session, or (counted
// by second, where a copy counts as the previous release counts it) one
// more visitor counted at its second, no admission.
func (rm *Room) joinedLocked(v *view, x store.Session) {
	if v.current {
		rm.pending.session(x)
	} else {
		rm.pending.legacy.count(x.Seen, 1)
	}
	rm.noteLocked(x)
}

// seenLocked accounts for a request of the admitted visitor of cookie c, a
// sign of life x of their session: reported, and if the cookie is of
// version 1, its count by second converted. Counted by second, the
// request changes nothing shared: only a re-issue does (reissued).
func (rm *Room) seenLocked(v *view, x store.Session, c *cookieState) {
	if v.current {
		rm.pending.session(x)
		if c.legacy {
			rm.pending.legacy.convert(x.ID, floorDiv(c.lastCheckIn, 1000))
		}
	}
	rm.noteLocked(x)
}

// revokedLocked accounts for the revoke x of a session whose cookie was
// last checked in at Unix second checkInSec: the record marked revoked, or
// the visitor's count taken from that second.
func (rm *Room) revokedLocked(v *view, x store.Session, checkInSec int64) {
	if v.current {
		rm.pending.session(x)
	} else {
		rm.pending.legacy.count(checkInSec, -1)
	}
	rm.noteLocked(x)
}

// reissued accounts for the re-issue at now (Unix ms) of an admitted
// cookie last checked in at from: counted by second, the visitor's count
// moves to now's second. It takes rm.mu only then.
func (rm *Room) reissued(v *view, from, now int64) {
	if v.current {
		return
	}
	rm.mu.Lock()
	rm.pending.legacy.count(floorDiv(from, 1000), -1)
	rm.pending.legacy.count(floorDiv(now, 1000), 1)
	rm.mu.Unlock()
}

// encodeCookie returns the cookie value of c in the version the formats
// written decide.
func (rm *Room) encodeCookie(v *view, c cookieState) string {
	switch {
	case v.cookie >= cookieVersion:
		return rm.codec.encode(c)
	case v.current:
		return rm.codec.encodeV2(c)
	}
	return rm.codec.encodeV1(c)
}
