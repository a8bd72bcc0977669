package store

import (
	"context"
	"encoding/binary"
	"fmt"
)

// HistoryMinutes is how many minutes of history a HistoryStore keeps for a
// room: 30 days. Records older than that, counted back from the newest
// minute appended, are removed by AppendHistory.
const HistoryMinutes = 30 * 24 * 60

// MaxRecordBytes bounds the Data of one Record. Package waitingroom writes
// about 20 to 200 bytes a minute (more for a minute whose waits are spread
// over many durations); a Tally encodes to at most this.
const MaxRecordBytes = 4096

// Record is one minute of a room's kept history: the figures of all its
// instances together, encoded by MarshalTally. Stores keep Data as opaque
// bytes.
type Record struct {
	// Minute is the minute, Unix seconds / 60.
	Minute int64
	// Data is the encoded figures, at most MaxRecordBytes.
	Data []byte
}

// HistoryStore is implemented by stores that keep a room's history: one
// small record per minute, for HistoryMinutes. It is optional: a room
// whose store does not implement it keeps no history (see
// admin.Minutes). Every store of this module implements it.
//
// The rooms write at most one record per room per minute (the instance
// whose sync closes the minute appends it), and read it when an operator
// asks, never on a visitor's request. The history is apart from the State:
// Update never reads or writes it, and an instance of a release that knows
// nothing of it is not disturbed by it.
type HistoryStore interface {
	// AppendHistory stores recs for the named room: a record for a minute
	// already kept replaces it. It then removes the room's records of
	// the minutes up to the newest minute of recs minus HistoryMinutes,
	// so that at most HistoryMinutes are kept.
	// A record whose Data is longer than MaxRecordBytes is an error, and
	// nothing is written. Appending no records does nothing. Errors wrap
	// ErrNoSchema, ErrAuth or ErrUnavailable as Update's do; ctx is
	// honoured.
	AppendHistory(ctx context.Context, room string, recs []Record) error
	// ReadHistory returns the named room's records of the minutes from
	// from (included) to to (excluded), oldest first; none (and no error)
	// for a room without history.
	ReadHistory(ctx context.Context, room string, from, to int64) ([]Record, error)
}

// Tally is what the instances of a room observed in one minute: the
// figures of the room's kept history. While the minute is recent it is
// part of the State (State.Tallies), where every instance's sync adds to
// it; once it is over it is written to the HistoryStore (MarshalTally) and
// leaves the State.
//
// Durations are in seconds. Waits and Sessions are histograms: Key is a
// duration rounded to 10 seconds below 10 minutes, to 30 seconds below an
// hour, to 5 minutes below 6 hours and to 30 minutes above, up to 48
// hours (package waitingroom rounds), N the number of visitors.
type Tally struct {
	// Minute is the minute, Unix seconds / 60.
	Minute int64
	// Active and Waiting are the most active and waiting visitors any sync
	// of the minute counted.
	Active, Waiting int64
	// Admitted is the number of admissions of the minute. It is set when
	// the minute is written; while the minute is in the State, the State's
	// Admitted counts it.
	Admitted int64
	// Abandoned is the number of waiting visitors whose count expired in
	// the minute: they stopped refreshing before they were let in.
	Abandoned int64
	// TotalActiveUsers and NewUsersPerMinute are the limits in force at
	// the minute's latest sync, and Event the name of the scheduled event
	// then in force (its pre-queue included), "" for none.
	TotalActiveUsers, NewUsersPerMinute int64
	Event                               string
	// Waits is the histogram of the waits of the visitors let in during
	// the minute, MaxWait the longest of them.
	Waits   []Count
	MaxWait int64
	// Sessions is the histogram of the lengths of the sessions that ended
	// during the minute, MaxSession the longest of them.
	Sessions   []Count
	MaxSession int64
	// Lottery is what the minute adds to the public record of the room's
	// lottery (package lottery): for each period it touched, the odds of
	// the refresh intervals that began in the minute (the interval that
	// straddles the period's start, in the period's first minute), and the
	// seed if it was revealed in the minute. The record of a period is the union of
	// its minutes' (admin.Lottery). Nil for a minute with neither.
	Lottery []Period
}

// Period is one minute's part of the public record of a period of a
// room's lottery.
type Period struct {
	// Start and End are the period, [Start, End) in Unix seconds.
	Start, End int64
	// Commitment is the commitment to the period's seed (lottery.Commit).
	Commitment [32]byte
	// Seed is the period's seed when the minute revealed it; zero
	// otherwise.
	Seed [32]byte
	// Interval is the length, in ms, of the refresh intervals of Odds.
	Interval int64
	// Odds are the odds of the draws of the period's refresh intervals
	// that began in the minute (or, straddling its start, in the period's
	// first minute), in order of interval; Cuts, the cuts of
	// an event's shuffle (Seed.Cuts) of those intervals, and Prequeued
	// its Seed.Prequeued.
	Odds      []Odds
	Cuts      []Odds
	Prequeued int64
}

// maxTallyBuckets bounds the histogram buckets of a Tally read back, so a
// record stays within MaxRecordBytes: package waitingroom's rounding makes
// at most 305 distinct durations up to 48 hours.
const maxTallyBuckets = 310

// MarshalTally encodes t in the compact binary form kept by history
// stores. Later releases may append fields; UnmarshalTally ignores bytes
// after the ones it knows.
func MarshalTally(t *Tally) []byte {
	b := make([]byte, 0, 32+len(t.Event)+6*(len(t.Waits)+len(t.Sessions)))
	b = append(b, 1) // the record's version
	b = binary.AppendVarint(b, t.Minute)
	b = binary.AppendVarint(b, t.Active)
	b = binary.AppendVarint(b, t.Waiting)
	b = binary.AppendVarint(b, t.Admitted)
	b = binary.AppendVarint(b, t.Abandoned)
	b = binary.AppendVarint(b, t.TotalActiveUsers)
	b = binary.AppendVarint(b, t.NewUsersPerMinute)
	b = appendBytes(b, []byte(t.Event))
	b = appendCounts(b, t.Waits)
	b = binary.AppendVarint(b, t.MaxWait)
	b = appendCounts(b, t.Sessions)
	b = binary.AppendVarint(b, t.MaxSession)
	b = binary.AppendUvarint(b, uint64(len(t.Lottery)))
	for _, p := range t.Lottery {
		b = binary.AppendVarint(b, p.Start)
		b = binary.AppendVarint(b, p.End-p.Start)
		b = append(b, p.Commitment[:]...)
		if p.Seed == ([32]byte{}) {
			b = append(b, 0)
		} else {
			b = append(append(b, 1), p.Seed[:]...)
		}
		b = binary.AppendVarint(b, p.Interval)
		b = appendOdds(b, p.Odds)
		b = appendOdds(b, p.Cuts)
		b = binary.AppendVarint(b, p.Prequeued)
	}
	return b
}

// UnmarshalTally decodes bytes written by MarshalTally (of this release or
// a later one). Malformed input returns an error wrapping ErrCorrupt; it
// never panics.
func UnmarshalTally(data []byte) (*Tally, error) {
	if len(data) == 0 || data[0] < 1 {
		return nil, fmt.Errorf("%w: empty or unknown history record", ErrCorrupt)
	}
	d := decoder{b: data[1:]}
	t := d.tally()
	if d.err != nil {
		return nil, d.err
	}
	return t, nil
}

func (d *decoder) tally() *Tally {
	t := &Tally{}
	t.Minute = d.varint()
	t.Active = d.varint()
	t.Waiting = d.varint()
	t.Admitted = d.varint()
	t.Abandoned = d.varint()
	t.TotalActiveUsers = d.varint()
	t.NewUsersPerMinute = d.varint()
	t.Event = string(d.bytes())
	t.Waits = d.counts()
	t.MaxWait = d.varint()
	t.Sessions = d.counts()
	t.MaxSession = d.varint()
	if len(t.Waits) > maxTallyBuckets || len(t.Sessions) > maxTallyBuckets {
		d.fail("tally histogram")
	}
	if len(d.b) > 0 { // a minute written before the lottery was kept has none
		t.Lottery = d.periods()
	}
	return t
}

// periods reads the lottery's periods of a Tally.
func (d *decoder) periods() []Period {
	n := d.length(38)
	if n == 0 {
		return nil
	}
	ps := make([]Period, n)
	for i := range ps {
		p := &ps[i]
		p.Start = d.varint()
		p.End = p.Start + d.varint()
		d.fixed(p.Commitment[:], "commitment")
		if len(d.b) > 0 && d.b[0] == 1 {
			d.b = d.b[1:]
			d.fixed(p.Seed[:], "seed")
		} else if len(d.b) == 0 || d.b[0] != 0 {
			d.fail("period")
		} else {
			d.b = d.b[1:]
		}
		p.Interval = d.varint()
		p.Odds = d.odds()
		p.Cuts = d.odds()
		p.Prequeued = d.varint()
		if d.err != nil {
			return nil
		}
	}
	return ps
}

// appendTallies writes the tallies of a State (encoding 4).
func appendTallies(b []byte, recorded int64, ts []Tally) []byte {
	b = binary.AppendVarint(b, recorded)
	b = binary.AppendUvarint(b, uint64(len(ts)))
	for i := range ts {
		b = appendBytes(b, MarshalTally(&ts[i]))
	}
	return b
}

// tallies reads what appendTallies wrote.
func (d *decoder) tallies() (int64, []Tally) {
	recorded := d.varint()
	n := d.length(2)
	if n == 0 {
		return recorded, nil
	}
	ts := make([]Tally, 0, n)
	for range n {
		raw := d.bytes()
		if d.err != nil {
			return 0, nil
		}
		t, err := UnmarshalTally(raw)
		if err != nil {
			d.fail("tally")
			return 0, nil
		}
		ts = append(ts, *t)
	}
	return recorded, ts
}
