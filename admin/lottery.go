package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/internal/hook"
	"github.com/go-waitingroom/waitingroom/lottery"
	"github.com/go-waitingroom/waitingroom/store"
)

// The lottery's public records (docs/lottery.md): the periods the shared
// state still holds come from the latest sync; older ones are put
// together from the kept history, where each minute keeps the odds of
// the refresh intervals that began in it (the interval that straddles a
// period's start, in the period's first minute) and the seeds it
// revealed.

// ErrNoRecord is returned by Lottery when neither the room's latest sync
// nor its kept history holds a period of the lottery at the time asked.
var ErrNoRecord = errors.New("waitingroom: no lottery period at that time")

// lotteryReach is how much of the kept history is read first, from an
// hour before the time asked: an hour's period holding it, and
// revealReach after the period's end. A longer period found there (an
// event's shuffle) is read again whole.
const lotteryReach = 2*time.Hour + revealReach

// revealReach is how far after a period's end the kept history is read
// for its seed, revealed a few refresh intervals after the end.
const revealReach = time.Hour

// Lottery returns the public record of the period of rm's lottery that
// holds at (package lottery): the period, the commitment to its seed, the
// odds of each refresh interval drawn in it so far and the seed once
// revealed, which lottery.Verify and `waitingroom verify` read. The
// periods of the latest sync (the latest revealed, the current one and
// the next) cost no I/O; an older one is put together from the kept
// history (one query over three hours, or over the whole of an event's
// longer period and the hour after), so it can be checked for as long
// as the store keeps history (HistoryRetention). The revealed record of
// an event's shuffle has its list of places, one more read (the store
// keeps it as long as the history: see docs/lottery.md). It returns ErrNoRecord
// when no period holds at, and ErrNoHistory for an older period when the
// store keeps no history. Safe for concurrent use.
func Lottery(ctx context.Context, rm *waitingroom.Room, at time.Time) (*lottery.Record, error) {
	r, err := periodRecord(ctx, rm, at)
	if err == nil && !r.Seed.IsZero() && len(r.Cuts) > 0 {
		// A shuffle's list, published with its seed.
		var ps []uint64
		ps, err = hook.Syncer(rm).(interface {
			Places(context.Context, int64) ([]uint64, error)
		}).Places(ctx, r.Start)
		if err != nil {
			return nil, fmt.Errorf("waitingroom: the shuffle's list: %w", err)
		}
		r.Places = make([]float64, len(ps))
		for i, p := range ps {
			r.Places[i] = float64(p) / (1 << 53)
		}
	}
	return r, err
}

// periodRecord is Lottery without a shuffle's list.
func periodRecord(ctx context.Context, rm *waitingroom.Room, at time.Time) (*lottery.Record, error) {
	if r := liveRecord(rm, at.Unix()); r != nil {
		return r, nil
	}
	hs := hook.HistoryStore(rm)
	if hs == nil {
		return nil, ErrNoHistory
	}
	from := floorDiv(at.Add(-time.Hour).Unix(), 60)
	to := from + int64(lotteryReach/time.Minute)
	r, err := historyRecord(ctx, rm, hs, from, to, at.Unix())
	if r != nil {
		// A period longer than the hours read (an event's shuffle, from
		// its pre-queue's opening): read the whole of it.
		if start, end := floorDiv(r.Start, 60), floorDiv(r.End, 60)+int64(revealReach/time.Minute); start < from || end > to {
			r, err = historyRecord(ctx, rm, hs, start, end, at.Unix())
		}
	}
	if err == nil && r == nil {
		err = ErrNoRecord
	}
	return r, err
}

// historyRecord puts together the record of the period that holds sec
// (Unix seconds) from the minutes [from, to] of rm's kept history and
// those not written yet; nil when none holds it.
func historyRecord(ctx context.Context, rm *waitingroom.Room, hs store.HistoryStore, from, to, sec int64) (*lottery.Record, error) {
	recs, err := hs.ReadHistory(ctx, rm.Name(), from, to)
	if err != nil {
		return nil, fmt.Errorf("waitingroom: history: %w", err)
	}
	var ps []store.Period
	for _, rec := range recs {
		if t, err := store.UnmarshalTally(rec.Data); err == nil {
			ps = append(ps, t.Lottery...)
		}
	}
	for _, t := range hook.Unwritten(rm) {
		ps = append(ps, t.Lottery...)
	}
	return recordOf(ps, sec), nil
}

// liveRecord returns the record of the latest sync's period that holds
// sec (Unix seconds), or nil.
func liveRecord(rm *waitingroom.Room, sec int64) *lottery.Record {
	for _, r := range hook.Lottery(rm) {
		if r.Start <= sec && sec < r.End {
			return &r
		}
	}
	return nil
}

// recordOf puts together the record of the period that drew at sec from
// the minutes' parts ps, oldest first: the odds of all its intervals, and
// its seed. Periods overlap only where a state was lost: the new state's
// period starts inside the lost one's, or, for the hour after, is
// committed again over the same span. Of the periods that hold sec, the
// one that drew is the latest to start and, of those with the same
// start, the latest written.
func recordOf(ps []store.Period, sec int64) *lottery.Record {
	var drew *store.Period
	for i := range ps {
		if p := &ps[i]; p.Start <= sec && sec < p.End && (drew == nil || p.Start >= drew.Start) {
			drew = p
		}
	}
	if drew == nil {
		return nil
	}
	r := &lottery.Record{Period: lottery.Period{Start: drew.Start, End: drew.End}, Commitment: drew.Commitment}
	for _, p := range ps {
		if p.Start != r.Start || p.End != r.End || p.Commitment != r.Commitment {
			continue // another period, or a lost state's
		}
		if p.Seed != ([32]byte{}) {
			r.Seed = p.Seed
		}
		if len(p.Odds)+len(p.Cuts) > 0 && r.IntervalMS == 0 {
			r.IntervalMS = p.Interval
		}
		if p.Interval == r.IntervalMS {
			r.Odds, r.Cuts = appendOdds(r.Odds, p.Odds), appendOdds(r.Cuts, p.Cuts)
		}
		r.Prequeued = max(r.Prequeued, p.Prequeued)
	}
	r.Odds, r.Cuts = sortOdds(r.Odds), sortOdds(r.Cuts)
	return r
}

// appendOdds appends the store's odds (or cuts) os to the record's.
func appendOdds(to []lottery.Odds, os []store.Odds) []lottery.Odds {
	for _, o := range os {
		to = append(to, lottery.Odds{Interval: o.Interval, Odds: o.Odds})
	}
	return to
}

// sortOdds orders os by interval, one record each.
func sortOdds(os []lottery.Odds) []lottery.Odds {
	slices.SortFunc(os, func(a, b lottery.Odds) int { return cmp.Compare(a.Interval, b.Interval) })
	return slices.CompactFunc(os, func(a, b lottery.Odds) bool { return a.Interval == b.Interval })
}

// Records returns a handler that publishes rm's lottery records to
// anyone, without authentication: they hold nothing secret (a seed is
// revealed only once its period's draws are done). Mount it where
// visitors can reach it, for example:
//
//	mux.Handle("/lottery", admin.Records(room))
//
// GET (or HEAD) without a query answers the status's lottery object
// (current, next and revealed records, each null when there is none;
// a revealed shuffle's with its list, which the status leaves out);
// with ?at= (RFC 3339, or Unix seconds), the record of the period that
// holds that time (Lottery), or 404 with a JSON error. Whatever the
// traffic, it reads the store at most once at a time (a request that
// ends while it waits for its turn leaves the queue), each revealed
// period's record once (a revealed record never changes) and an older
// period not revealed (a lost state's) once a minute for each time asked
// (another second of it may belong to the period that replaced it).
// Responses of the current periods may be cached for a second. Safe for
// concurrent use.
func Records(rm *waitingroom.Room) http.Handler {
	return &records{rm: rm, turn: make(chan struct{}, 1), kept: map[int64]*lottery.Record{}, dark: map[int64]darkRecord{}}
}

// records is the handler Records returns.
type records struct {
	rm   *waitingroom.Room
	turn chan struct{} // one store read at a time
	// Under turn: the revealed records read from the store, by start;
	// and those read without a seed, by the second asked (within a lost
	// period, a later second may belong to the period that replaced it).
	kept map[int64]*lottery.Record
	dark map[int64]darkRecord
}

// darkRecord is a record read from the store without its seed, kept
// until until (Unix seconds).
type darkRecord struct {
	r     *lottery.Record
	until int64
}

// unrevealedFor is how long, in seconds, Records keeps a record read from
// the store without its seed: that of a state lost before revealing it.
const unrevealedFor = 60

// maxKeptRecords bounds the revealed records Records keeps: a month of
// hours.
const maxKeptRecords = 31 * 24

func (h *records) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, "GET, HEAD")
		return
	}
	q := r.URL.Query().Get("at")
	if q == "" {
		out := lotteryAt(hook.Lottery(h.rm), hook.Now(h.rm))
		if rv := out.Revealed; rv != nil && len(rv.Cuts) > 0 {
			// A shuffle's: with its list, which the status leaves out
			// (without it, every visitor of the pre-queue would find
			// their place missing).
			full, err := h.record(r.Context(), time.Unix(rv.Start, 0))
			if err != nil {
				writeError(w, http.StatusServiceUnavailable, "waitingroom: the lottery's record could not be read")
				return
			}
			out.Revealed = full
		}
		cacheFor(w, "public, max-age=1")
		writeJSON(w, http.StatusOK, out)
		return
	}
	at, err := parseAt(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	rec, err := h.record(r.Context(), at)
	switch {
	case errors.Is(err, ErrNoRecord) || errors.Is(err, ErrNoHistory):
		writeError(w, http.StatusNotFound, err.Error())
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "waitingroom: the lottery's record could not be read")
	default:
		if rec.Seed.IsZero() {
			cacheFor(w, "public, max-age=1")
		} else {
			cacheFor(w, "public, max-age=3600")
		}
		writeJSON(w, http.StatusOK, rec)
	}
}

// record returns the record of the period that holds at: live, kept, or
// read from the store (one read at a time) and kept once revealed. Times
// the store cannot hold (later than the next period, older than its
// history) are not read.
func (h *records) record(ctx context.Context, at time.Time) (*lottery.Record, error) {
	sec := at.Unix()
	if r := liveRecord(h.rm, sec); r != nil && (r.Seed.IsZero() || len(r.Cuts) == 0) {
		return r, nil // no list to read
	}
	now := hook.Now(h.rm)
	if at.After(now) || at.Before(now.Add(-HistoryRetention)) {
		return nil, ErrNoRecord
	}
	select {
	case h.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-h.turn }()
	for _, r := range h.kept {
		if r.Start <= sec && sec < r.End {
			return r, nil
		}
	}
	if d, ok := h.dark[sec]; ok && d.until > now.Unix() {
		return d.r, nil
	}
	r, err := Lottery(ctx, h.rm, at)
	switch {
	case err != nil:
	case r.Seed.IsZero():
		if len(h.dark) >= maxKeptRecords {
			clear(h.dark)
		}
		h.dark[sec] = darkRecord{r: r, until: now.Unix() + unrevealedFor}
	default:
		if len(h.kept) >= maxKeptRecords {
			clear(h.kept)
		}
		h.kept[r.Start] = r
	}
	return r, err
}

// cacheFor sets the response's Cache-Control to v, unless it has one
// (the admin API's no-store).
func cacheFor(w http.ResponseWriter, v string) {
	if w.Header().Get("Cache-Control") == "" {
		w.Header().Set("Cache-Control", v)
	}
}

// parseAt reads a time given as RFC 3339 or as Unix seconds.
func parseAt(s string) (time.Time, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("waitingroom: at %q: want RFC 3339 or Unix seconds", clipText(s))
	}
	return t, nil
}

// clipText shortens s for an error message.
func clipText(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}
