package admin

import (
	"encoding/csv"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// The kept history over the admin API: GET /minutes and GET /reports.

// maxPoints bounds the points of a GET /minutes answer: a longer range
// with no step gets one coarse enough (a step of whole minutes).
const maxPoints = 1440

// minutesRange is a parsed from/to/step/format query.
type minutesRange struct {
	from, to time.Time
	step     time.Duration
	csv      bool
}

// parseRange reads from and to (RFC 3339; default the last def), step
// (seconds, a multiple of 60; default the finest that gives at most
// maxPoints) and format ("json", the default, or "csv"). The range is at
// most the retention.
func parseRange(r *http.Request, now time.Time, def time.Duration) (minutesRange, error) {
	q := r.URL.Query()
	out := minutesRange{to: now, from: now.Add(-def)}
	for _, p := range []struct {
		name string
		t    *time.Time
	}{{"from", &out.from}, {"to", &out.to}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return out, fmt.Errorf("%s: want an RFC 3339 time such as 2026-05-27T15:54:00Z, got %q", p.name, v)
			}
			*p.t = t.UTC() // the answer's times are all in UTC
		}
	}
	if !out.from.Before(out.to) {
		return out, errors.New("from must be before to")
	}
	if out.to.Sub(out.from) > HistoryRetention+24*time.Hour {
		return out, fmt.Errorf("the range is longer than the history kept (%d days)", HistoryRetention/(24*time.Hour))
	}
	minutes := int64((out.to.Sub(out.from) + time.Minute - 1) / time.Minute)
	out.step = time.Duration(max((minutes+maxPoints-1)/maxPoints, 1)) * time.Minute
	if v := q.Get("step"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 60 || n%60 != 0 || n > 86400 {
			return out, fmt.Errorf("step: want seconds, a multiple of 60 from 60 to 86400, got %q", v)
		}
		out.step = time.Duration(n) * time.Second
	}
	switch f := q.Get("format"); f {
	case "", "json":
	case "csv":
		out.csv = true
	default:
		return out, fmt.Errorf("format: want json or csv, got %q", f)
	}
	return out, nil
}

// adminDurations are Durations in seconds.
type adminDurations struct {
	Count      int     `json:"count"`
	P50Seconds float64 `json:"p50Seconds"`
	P90Seconds float64 `json:"p90Seconds"`
	MaxSeconds float64 `json:"maxSeconds"`
}

func durationsJSON(d Durations) adminDurations {
	return adminDurations{Count: d.Count, P50Seconds: d.P50.Seconds(), P90Seconds: d.P90.Seconds(), MaxSeconds: d.Max.Seconds()}
}

// adminMinute is one point of GET /minutes: a minute, or step's worth.
type adminMinute struct {
	Minute            time.Time      `json:"minute"`
	Active            int            `json:"active"`
	Waiting           int            `json:"waiting"`
	Admitted          int            `json:"admitted"`
	Abandoned         int            `json:"abandoned"`
	TotalActiveUsers  int            `json:"totalActiveUsers"`
	NewUsersPerMinute int            `json:"newUsersPerMinute"`
	Event             string         `json:"event"`
	Wait              adminDurations `json:"wait"`
	Session           adminDurations `json:"session"`
	Partial           bool           `json:"partial"`
}

// adminMinutes is the body of GET /minutes.
type adminMinutes struct {
	Room        string        `json:"room"`
	From        time.Time     `json:"from"`
	To          time.Time     `json:"to"`
	StepSeconds int64         `json:"stepSeconds"`
	Minutes     []adminMinute `json:"minutes"`
}

// adminReport is one event of GET /reports.
type adminReport struct {
	Event             string         `json:"event"`
	From              time.Time      `json:"from"`
	To                time.Time      `json:"to"`
	Minutes           int            `json:"minutes"`
	Admitted          int            `json:"admitted"`
	Abandoned         int            `json:"abandoned"`
	PeakActive        int            `json:"peakActive"`
	PeakWaiting       int            `json:"peakWaiting"`
	PeakAdmitted      int            `json:"peakAdmitted"`
	NewUsersPerMinute int            `json:"newUsersPerMinute"`
	Wait              adminDurations `json:"wait"`
	Session           adminDurations `json:"session"`
}

// minutes serves GET /minutes (default: the last 24 hours) and GET
// /reports (default: the last 30 days).
func (a *admin) minutes(w http.ResponseWriter, r *http.Request, reports bool) {
	now := a.rm.Stats().Now.UTC()
	def := 24 * time.Hour
	if reports {
		def = HistoryRetention
	}
	q, err := parseRange(r, now, def)
	if err != nil {
		writeError(w, http.StatusBadRequest, "waitingroom: "+err.Error())
		return
	}
	ms, err := Minutes(r.Context(), a.rm, q.from, q.to)
	switch {
	case errors.Is(err, ErrNoHistory):
		writeError(w, http.StatusNotFound, "waitingroom: the room's store keeps no history")
		return
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "waitingroom: the history could not be read from the store")
		return
	}
	name := a.rm.Name()
	if reports {
		rs := Reports(ms)
		out := make([]adminReport, 0, len(rs))
		for _, x := range rs {
			out = append(out, adminReport{Event: x.Event, From: x.From.UTC(), To: x.To.UTC(), Minutes: x.Minutes,
				Admitted: x.Admitted, Abandoned: x.Abandoned, PeakActive: x.PeakActive, PeakWaiting: x.PeakWaiting,
				PeakAdmitted: x.PeakAdmitted, NewUsersPerMinute: x.NewUsersPerMinute,
				Wait: durationsJSON(x.Wait), Session: durationsJSON(x.Session)})
		}
		if q.csv {
			writeCSV(w, name+"-reports.csv", reportsCSV(out))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"room": name, "from": q.from, "to": q.to, "reports": out})
		return
	}
	if q.csv && r.URL.Query().Get("step") == "" {
		q.step = time.Minute // an export is minute by minute unless asked
	}
	out := adminMinutes{Room: name, From: q.from, To: q.to, StepSeconds: int64(q.step / time.Second), Minutes: []adminMinute{}}
	for _, m := range Coarsen(ms, q.step) {
		out.Minutes = append(out.Minutes, adminMinute{Minute: m.Minute.UTC(), Active: m.Active, Waiting: m.Waiting,
			Admitted: m.Admitted, Abandoned: m.Abandoned, TotalActiveUsers: m.TotalActiveUsers,
			NewUsersPerMinute: m.NewUsersPerMinute, Event: m.Event,
			Wait: durationsJSON(m.Wait), Session: durationsJSON(m.Session), Partial: m.Partial})
	}
	if q.csv {
		writeCSV(w, name+"-minutes.csv", minutesCSV(out.Minutes))
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func secs(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func minutesCSV(ms []adminMinute) [][]string {
	rows := [][]string{{"minute", "active", "waiting", "admitted", "abandoned", "total_active_users", "new_users_per_minute", "event",
		"waits", "wait_p50_seconds", "wait_p90_seconds", "wait_max_seconds",
		"sessions", "session_p50_seconds", "session_p90_seconds", "session_max_seconds", "partial"}}
	for _, m := range ms {
		rows = append(rows, []string{m.Minute.Format(time.RFC3339), strconv.Itoa(m.Active), strconv.Itoa(m.Waiting),
			strconv.Itoa(m.Admitted), strconv.Itoa(m.Abandoned), strconv.Itoa(m.TotalActiveUsers), strconv.Itoa(m.NewUsersPerMinute),
			csvText(m.Event), strconv.Itoa(m.Wait.Count), secs(m.Wait.P50Seconds), secs(m.Wait.P90Seconds), secs(m.Wait.MaxSeconds),
			strconv.Itoa(m.Session.Count), secs(m.Session.P50Seconds), secs(m.Session.P90Seconds), secs(m.Session.MaxSeconds),
			strconv.FormatBool(m.Partial)})
	}
	return rows
}

func reportsCSV(rs []adminReport) [][]string {
	rows := [][]string{{"event", "from", "to", "minutes", "admitted", "abandoned", "peak_active", "peak_waiting", "peak_admitted",
		"new_users_per_minute", "waits", "wait_p50_seconds", "wait_p90_seconds", "wait_max_seconds",
		"sessions", "session_p50_seconds", "session_p90_seconds", "session_max_seconds"}}
	for _, x := range rs {
		rows = append(rows, []string{csvText(x.Event), x.From.Format(time.RFC3339), x.To.Format(time.RFC3339), strconv.Itoa(x.Minutes),
			strconv.Itoa(x.Admitted), strconv.Itoa(x.Abandoned), strconv.Itoa(x.PeakActive), strconv.Itoa(x.PeakWaiting),
			strconv.Itoa(x.PeakAdmitted), strconv.Itoa(x.NewUsersPerMinute),
			strconv.Itoa(x.Wait.Count), secs(x.Wait.P50Seconds), secs(x.Wait.P90Seconds), secs(x.Wait.MaxSeconds),
			strconv.Itoa(x.Session.Count), secs(x.Session.P50Seconds), secs(x.Session.P90Seconds), secs(x.Session.MaxSeconds)})
	}
	return rows
}

// csvText keeps a name from being read as a formula by a spreadsheet.
func csvText(s string) string {
	if s != "" && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' || s[0] == '\t' || s[0] == '\r') {
		return "'" + s
	}
	return s
}

func writeCSV(w http.ResponseWriter, filename string, rows [][]string) {
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+filename+`"`)
	w.WriteHeader(http.StatusOK)
	cw := csv.NewWriter(w)
	_ = cw.WriteAll(rows)
}
