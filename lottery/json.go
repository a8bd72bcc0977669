package lottery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A record's JSON is read as the verifier page's script (docs/verify.js)
// reads it, so that one record never gets two verdicts: encoding/json
// alone would take "Odds" or "ODDS" for "odds", where JavaScript takes
// them for other keys, and would refuse 3.0 for an interval, where
// JavaScript reads 3.

// recordKeys are the keys of a record and of its odds and cuts.
var recordKeys = []string{"start", "end", "commitment", "seed", "intervalMs", "odds", "cuts", "prequeued", "places", "interval"}

// maxWhole is the largest whole number a record may hold: the largest
// JavaScript holds exactly (Number.MAX_SAFE_INTEGER).
const maxWhole = 1<<53 - 1

// UnmarshalJSON reads r from its JSON form. It refuses, with an
// ErrRecord, a key that names one of the record's in another case
// ("Odds", "SEED"): the key a room means is then unclear. Whole numbers
// (start, end, intervalMs, prequeued, an interval) may be written in any
// form JSON allows for a whole number (3, 3.0, 3e0) within ±(2^53 - 1).
// Keys it does not know are ignored; of a key given twice, the last
// stands.
func (r *Record) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		return nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return recordError(err)
	}
	if err := exactKeys(top); err != nil {
		return err
	}
	for _, list := range []string{"odds", "cuts"} {
		var items []map[string]json.RawMessage
		if json.Unmarshal(top[list], &items) == nil {
			for _, item := range items {
				if err := exactKeys(item); err != nil {
					return err
				}
			}
		}
	}
	var w struct {
		Start      whole      `json:"start"`
		End        whole      `json:"end"`
		Commitment Hash       `json:"commitment"`
		Seed       Seed       `json:"seed"`
		IntervalMS whole      `json:"intervalMs"`
		Odds       []wireOdds `json:"odds"`
		Cuts       []wireOdds `json:"cuts"`
		Prequeued  whole      `json:"prequeued"`
		Places     []float64  `json:"places"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return recordError(err)
	}
	*r = Record{
		Period:     Period{Start: int64(w.Start), End: int64(w.End)},
		Commitment: w.Commitment, Seed: w.Seed, IntervalMS: int64(w.IntervalMS),
		Odds: odds(w.Odds), Cuts: odds(w.Cuts), Prequeued: int64(w.Prequeued), Places: w.Places,
	}
	return nil
}

// exactKeys returns an ErrRecord if a key of obj names one of the
// record's keys in another case, as encoding/json would fold it.
func exactKeys(obj map[string]json.RawMessage) error {
	for k := range obj {
		for _, name := range recordKeys {
			if k != name && strings.EqualFold(k, name) {
				return fmt.Errorf("%w: key %q: did you mean %q? (keys are case-sensitive)", ErrRecord, clip([]byte(k)), name)
			}
		}
	}
	return nil
}

// recordError wraps err, from encoding/json, as an ErrRecord.
func recordError(err error) error {
	if errors.Is(err, ErrRecord) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrRecord, err)
}

// whole is a whole number of a record's JSON: any form of a JSON number
// whose value is whole and within ±maxWhole; null reads as 0.
type whole int64

func (n *whole) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > maxWhole {
		return fmt.Errorf("%w: %s: want a whole number within ±(2^53 - 1)", ErrRecord, clip(b))
	}
	*n = whole(f)
	return nil
}

// wireOdds is an Odds as its JSON is read.
type wireOdds struct {
	Interval whole   `json:"interval"`
	Odds     float64 `json:"odds"`
}

// odds converts ws to Odds; nil stays nil.
func odds(ws []wireOdds) []Odds {
	if ws == nil {
		return nil
	}
	os := make([]Odds, len(ws))
	for i, w := range ws {
		os[i] = Odds{Interval: int64(w.Interval), Odds: w.Odds}
	}
	return os
}
