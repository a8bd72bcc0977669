package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Kind is how a visitor behaves (Options.Spammers, Options.Replayers,
// Options.Cloners).
type Kind uint8

// Kinds of visitor. The zero value is Polite. Polite visitors and spammers
// are honest: they send the cookie the room set them last. Replayers and
// cloner groups are not.
const (
	// Polite visitors come back when their page asks.
	Polite Kind = iota
	// Spammer visitors send a request every Options.SpamEvery while they
	// wait.
	Spammer
	// Replayer visitors send the first waiting cookie the room gave them
	// again and again.
	Replayer
	// Cloner visitors are groups of clients sharing one waiting cookie.
	Cloner
	// Bot visitors are the identities of a bot farm
	// (Options.BotsPerMinute): each a fresh cookie that comes back when
	// its page asks, answers the room's challenge only with
	// Options.BotsSolve, and leaves after Options.BotGiveUp.
	Bot
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case Polite:
		return "polite"
	case Spammer:
		return "spammer"
	case Replayer:
		return "replayer"
	case Cloner:
		return "cloner"
	case Bot:
		return "bot"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// kindCount is the number of kinds.
const kindCount = int(Bot) + 1

// honest reports whether visitors of kind k send the cookie the room set
// them last.
func (k Kind) honest() bool { return k == Polite || k == Spammer || k == Bot }

// Shown is a wait estimate as a visitor read it from a waiting response.
// The room rounds estimates up to whole minutes.
type Shown struct {
	// At is when the visitor was shown it, since the run's start.
	At time.Duration
	// Known is false when the room had no estimate to show.
	Known bool
	// Full reports that the room showed the queue as full.
	Full bool
	// Wait is the expected wait: FIFO, the time to get in; random, the
	// median.
	Wait time.Duration
	// P25, P50 and P75 are, for random queueing, the waits within which
	// the visitor gets in with probability 0.25, 0.5 and 0.75.
	P25, P50, P75 time.Duration
	// Position is, for FIFO queueing, the place in line shown with the
	// estimate (positionInLine; 1 is next), 0 when none was shown.
	Position int
}

// same reports whether s and o show the same estimate, whenever shown.
func (s Shown) same(o Shown) bool {
	s.At, o.At = 0, 0
	return s == o
}

// Visitor is the record of one virtual visitor (a cloner group is one
// visitor). Times are since the run's start.
type Visitor struct {
	// Arrival is the time of the visitor's first request.
	Arrival time.Duration
	// Admitted is when the room first let the visitor in (any client of a
	// cloner group); valid when WasAdmitted.
	Admitted time.Duration
	// WasAdmitted reports that the room let the visitor in.
	WasAdmitted bool
	// Abandoned reports that the visitor gave up waiting.
	Abandoned bool
	// Spammer reports that the visitor ignored the refresh interval: Kind
	// is Spammer.
	Spammer bool
	// Kind is how the visitor behaved.
	Kind Kind
	// Requests is the number of requests the visitor sent (all its
	// clients', for a cloner group).
	Requests int32
	// Admissions is the number of times the room let the visitor in anew:
	// requests that reached the application from a client that had not
	// been let in yet, carrying no cookie or a waiting one (a replayer's
	// old waiting cookie included). A room that gives every visitor one
	// place lets each in once: 1 when WasAdmitted, else 0. More are
	// admissions a replayer or a cloner group won beyond its place.
	Admissions int32
	// FirstEstimate is the first known estimate the visitor was shown;
	// zero (not Known) if they never saw one.
	FirstEstimate Shown
	// Estimates are the estimates the visitor was shown while waiting, in
	// order, each from the response that first showed it (a repeat of the
	// previous one is not listed again). Nil with Options.FirstEstimateOnly.
	Estimates []Shown
}

// Wait is the time from the visitor's first request to their admission;
// zero if they were never let in.
func (v *Visitor) Wait() time.Duration {
	if !v.WasAdmitted {
		return 0
	}
	return v.Admitted - v.Arrival
}

// Minute holds the figures of one minute of the run.
type Minute struct {
	// Minute is the minute's index from the run's start.
	Minute int `json:"Minute"`
	// Arrivals is the number of visitors who arrived in the minute.
	Arrivals int `json:"Arrivals"`
	// Admitted is the number of visitors let in during the minute.
	Admitted int `json:"Admitted"`
	// Admissions is the number of admissions during the minute: Admitted
	// and every admission beyond a visitor's first (Visitor.Admissions).
	// This is what NewUsersPerMinute bounds.
	Admissions int `json:"Admissions"`
	// WaitingAtStart and Waiting are the visitors waiting (arrived, not
	// let in, not given up) at the minute's start and end.
	WaitingAtStart int `json:"WaitingAtStart"`
	Waiting        int `json:"Waiting"`
	// PeakActive is the most visitors active at once during the minute: let
	// in, with a session the room renewed (a request answered with a fresh
	// cookie) within SessionDuration. A session counts until the end of the
	// second in which it ends, so the figure is never under the truth.
	// Every session the room opens counts: each client of a cloner group
	// let in holds its own, and so does each admission a replayer leaves
	// unused (Options.ReplayAfterAdmission).
	PeakActive int `json:"PeakActive"`
	// Capacity is what the limits allowed in the minute:
	// min(NewUsersPerMinute, TotalActiveUsers − active at the minute's
	// start + sessions that ended during it).
	Capacity int `json:"Capacity"`
	// Saturated reports demand above the limits all minute: at its start
	// at least Capacity visitors were waiting, and some still were at its
	// end.
	Saturated bool `json:"Saturated"`
}

// ChiSquare is Pearson's chi-square test of independence between the
// cohort's arrival deciles and admission deciles (a 10 × 10 table): a
// p-value above 0.01 does not reject, at 1 %, that the admission order is
// independent of the arrival order.
type ChiSquare struct {
	// Statistic is Pearson's statistic, Σ (observed − expected)² /
	// expected over the table's cells.
	Statistic float64 `json:"Statistic"`
	// DoF is the degrees of freedom, (10 − 1)².
	DoF int `json:"DoF"`
	// PValue is the probability of a statistic at least this large were
	// admission order independent of arrival order.
	PValue float64 `json:"PValue"`
	// N is the number of cohort visitors in the table; the test needs
	// N ≥ 500 (at least 5 expected per cell).
	N int `json:"N"`
}

// EstimateError compares FIFO estimates with the waits that followed: for
// each measured visitor, the first known estimate they were shown against
// the time from that response to their admission. Relative errors are
// |shown − actual| / actual.
type EstimateError struct {
	// N is the number of visitors measured.
	N int `json:"N"`
	// Median and P90 are the median and 90th percentile of the relative
	// error.
	Median float64 `json:"Median"`
	P90    float64 `json:"P90"`
	// Bias is the median of (shown − actual) / actual: positive when
	// estimates run long.
	Bias float64 `json:"Bias"`
}

// Calibration compares random-queue estimates with the waits that
// followed: the share of measured visitors let in within the P25, P50 and
// P75 of the first known estimate they were shown, counted from that
// response. Well calibrated, they are near 0.25, 0.5 and 0.75.
type Calibration struct {
	// N is the number of visitors measured.
	N int `json:"N"`
	// WithinP25, WithinP50 and WithinP75 are the shares, in [0, 1], of
	// them let in within the shown P25, P50 and P75.
	WithinP25 float64 `json:"WithinP25"`
	WithinP50 float64 `json:"WithinP50"`
	WithinP75 float64 `json:"WithinP75"`
}

// Result is what a run measured. It marshals to JSON in the shape of the
// write-up's data files (ArrivalMinutes and WaitTimeSeconds, one entry
// per visitor let in, in arrival order) plus the summary figures. Times are
// in seconds. A Result is not changed after Run returns and may be read
// from any goroutine.
type Result struct {
	// ArrivalMinutes is, for each visitor let in, the minute of their
	// arrival from the run's start (their queue bucket).
	ArrivalMinutes []int `json:"ArrivalMinutes"`
	// WaitTimeSeconds is, for each visitor let in, the seconds from their
	// first request to their admission.
	WaitTimeSeconds []float64 `json:"WaitTimeSeconds"`

	// Method, Instances, TotalActiveUsers and NewUsersPerMinute restate
	// the run's settings.
	Method            string `json:"Method"`
	Instances         int    `json:"Instances"`
	TotalActiveUsers  int    `json:"TotalActiveUsers"`
	NewUsersPerMinute int    `json:"NewUsersPerMinute"`

	// Visitors counts all visitors (a cloner group is one); Admitted those
	// let in; Abandoned those who gave up; StillWaiting those waiting when
	// the run ended; TurnedAway those who got neither the application nor
	// a waiting page (a closed room; a cloner group when all its clients
	// were); NotArrived those due after the end of a run cut short by
	// Options.Duration. They add up to Visitors.
	// SessionsLost counts visitors let in whose session the room ended
	// while they browsed (it answered a browsing request with a waiting
	// page); they leave.
	Visitors     int `json:"Visitors"`
	Admitted     int `json:"Admitted"`
	Abandoned    int `json:"Abandoned"`
	StillWaiting int `json:"StillWaiting"`
	TurnedAway   int `json:"TurnedAway"`
	NotArrived   int `json:"NotArrived"`
	SessionsLost int `json:"SessionsLost"`
	// Admissions is the number of admissions (Visitor.Admissions): Admitted
	// and every admission a visitor obtained beyond its first.
	Admissions int `json:"Admissions"`
	// Requests is the number of requests sent through the rooms' Handler;
	// WaitingResponses how many got a waiting page.
	Requests         int64 `json:"Requests"`
	WaitingResponses int64 `json:"WaitingResponses"`
	// DurationSeconds is the virtual time the run covered.
	DurationSeconds float64 `json:"DurationSeconds"`

	// KendallTau is Kendall's tau-b between arrival second (the queue
	// bucket, shared by every visitor of a second) and admission time over
	// every honest visitor let in (polite or spammer: the order figures
	// and the estimates leave out replayers and cloner groups): near 1
	// when visitors get in in the order of their arrival, as FIFO
	// promises. Because arrival seconds tie and admission times do not,
	// even a perfect order scores only KendallTauMax, just under 1;
	// KendallTau / KendallTauMax is the share of pairs from different
	// seconds let in in order, less the share let in out of order.
	KendallTau    float64 `json:"KendallTau"`
	KendallTauMax float64 `json:"KendallTauMax"`
	// CohortSeconds is when the cohort was taken; CohortSize the number of
	// honest visitors waiting then who were let in later; CohortTau
	// Kendall's tau-b between their arrival order and their admission
	// order (near 0 when admission does not depend on arrival, as random
	// queueing promises).
	CohortSeconds float64 `json:"CohortSeconds"`
	CohortSize    int     `json:"CohortSize"`
	CohortTau     float64 `json:"CohortTau"`
	// ChiSquare tests the cohort's admission deciles against its arrival
	// deciles.
	ChiSquare ChiSquare `json:"ChiSquare"`

	// MeanWaitSeconds is the mean wait of the visitors let in, of every
	// kind; Polite, Spammer, Replayer and Cloner split it by Kind (a
	// cloner group waits from its arrival until the first of its clients
	// is let in). The replayers' and cloner groups' means also count, with
	// their wait until the run's end, those still waiting then: a trick
	// that leaves some waiting for good is no gain. SpammerWaitRatio,
	// ReplayerWaitRatio and ClonerWaitRatio are the spammers', replayers'
	// and cloner groups' mean waits over the polite visitors' (1 when
	// their tricks gain nothing, below when they do); each is 0 without
	// both kinds.
	MeanWaitSeconds         float64 `json:"MeanWaitSeconds"`
	MeanWaitPoliteSeconds   float64 `json:"MeanWaitPoliteSeconds"`
	MeanWaitSpammerSeconds  float64 `json:"MeanWaitSpammerSeconds"`
	MeanWaitReplayerSeconds float64 `json:"MeanWaitReplayerSeconds"`
	MeanWaitClonerSeconds   float64 `json:"MeanWaitClonerSeconds"`
	SpammerWaitRatio        float64 `json:"SpammerWaitRatio"`

	// BotVisitors, BotAdmitted and BotRequests are the bot farm's
	// identities (Options.BotsPerMinute), those of them let in, and
	// their requests; BotShare is BotAdmitted over Admitted. BotSolves
	// and HumanSolves count the challenges (proofs of work) bots and
	// everyone else answered.
	BotVisitors       int     `json:"BotVisitors"`
	BotAdmitted       int     `json:"BotAdmitted"`
	BotRequests       int     `json:"BotRequests"`
	BotShare          float64 `json:"BotShare"`
	BotSolves         int     `json:"BotSolves"`
	HumanSolves       int     `json:"HumanSolves"`
	ReplayerWaitRatio float64 `json:"ReplayerWaitRatio"`
	ClonerWaitRatio   float64 `json:"ClonerWaitRatio"`

	// ReplayerMaxAdmissions and ClonerMaxAdmissions are the most
	// admissions (Visitor.Admissions) any one replayer or cloner group
	// obtained; ReplayerExtraAdmissions and ClonerExtraAdmissions the
	// admissions all of them obtained beyond one each. A room that gives
	// every visitor one place keeps the maxima at 1 and the extras at 0;
	// a cloner group whose clients each won their own admission counts
	// CloneSize − 1 extra.
	ReplayerMaxAdmissions   int `json:"ReplayerMaxAdmissions"`
	ReplayerExtraAdmissions int `json:"ReplayerExtraAdmissions"`
	ClonerMaxAdmissions     int `json:"ClonerMaxAdmissions"`
	ClonerExtraAdmissions   int `json:"ClonerExtraAdmissions"`

	// MaxAdmittedPerMinute is the most admissions in any minute
	// (Minute.Admissions, at most NewUsersPerMinute); PeakActive the most
	// visitors active at once (at most TotalActiveUsers), as Minute
	// defines it.
	MaxAdmittedPerMinute int `json:"MaxAdmittedPerMinute"`
	PeakActive           int `json:"PeakActive"`
	// Utilization is the admissions (Minute.Admissions) over the capacity
	// of the saturated minutes (Minute.Saturated): how fully the room used its limits while
	// demand exceeded them. 0 when no minute was saturated.
	Utilization      float64 `json:"Utilization"`
	SaturatedMinutes int     `json:"SaturatedMinutes"`

	// EstimateError judges FIFO estimates; Calibration random ones. Each is
	// set for runs of its queueing method, nil otherwise. Both judge honest
	// visitors only, and use the first known estimate a visitor was shown
	// (at the start of a queue, before anyone has been let in, the room
	// has none to show).
	EstimateError *EstimateError `json:"EstimateError,omitempty"`
	Calibration   *Calibration   `json:"Calibration,omitempty"`
	// PositionError judges the FIFO position in line shown with the first
	// known estimate against the true one: 1 + the visitors let in after
	// that response and before the visitor. Relative errors are
	// |shown − true| / true. Set for FIFO runs, nil otherwise.
	PositionError *EstimateError `json:"PositionError,omitempty"`

	// AbandonedCountedMaxSeconds is how long, at most, visitors who gave
	// up still counted as waiting in the room's figures after their last
	// check-in; AbandonedCountedMeanSeconds the mean. Measured at every
	// sync, comparing the room's count of waiting visitors with the
	// visitors really waiting; exact, as all instances sync at the same
	// instant. 0 when nobody gave up.
	AbandonedCountedMaxSeconds  float64 `json:"AbandonedCountedMaxSeconds"`
	AbandonedCountedMeanSeconds float64 `json:"AbandonedCountedMeanSeconds"`

	// StateBytes is the largest encoded size of the room's shared state,
	// sampled every minute: it grows with minutes of queue, not visitors.
	// It varies by a few bytes between equal runs, as the state holds
	// random identifiers.
	StateBytes int `json:"StateBytes"`

	// Minutes has one entry per minute of the run.
	Minutes []Minute `json:"Minutes"`

	// VisitorRecords has one record per visitor, in arrival order.
	VisitorRecords []Visitor `json:"-"`

	// undercount is the largest number of visitors the room failed to count
	// as waiting, measured like AbandonedCounted*; 0 when the room's count
	// never fell below the visitors really waiting.
	undercount int
}

// WriteJSON writes r as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(r)
}
