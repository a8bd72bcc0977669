package waitingroom_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/challenge"
)

// The model's clients with a challenge (modelCase.challenge): a proof of
// work of difficulty 1 (the room does the same whatever the difficulty),
// OnFail infinite, Who everyone or queued (modelCase.who). Honest
// browsers answer every puzzle
// with their next request, as the page's worker does; requests ask for
// JSON, whose waiting page has a Refresh header and the puzzle. Two kinds
// of clients never answer, and act on their own draws (model.arng), after
// everyone else at each tick:
//
//   - silent: a browser without JavaScript, keeping the newest cookie and
//     coming back when the page says;
//   - lapser: keeps the first cookie it was given, stays away until its
//     place lapsed (QueueHold), and resends it every one to three seconds
//     to the end: the new place it brings is the same every time.
//
// What the model holds them to:
//
//   - they are never let in, but for a first request without a cookie that
//     finds room with Who queued (a visitor let straight in is never
//     challenged), which the paired cases leave out;
//   - they are not counted as waiting: the room's count is the model's,
//     which counts the visitors who passed (on one instance exactly);
//   - a parked place gets one chance per refresh interval per instance;
//   - paired cases run each seed again without them (the other clients
//     draw the same, and RefreshJitter is off), and every honest browser
//     let in without them is let in with them no later than one refresh
//     interval after (compareAlone): they delay nobody.

var challengeCases = []modelCase{
	{
		name: "one instance, fifo, renewal, challenge everyone", instances: 1, method: waitingroom.FIFO, renew: true,
		session: time.Minute, total: 20, perMinute: 6, minutes: 12,
		honest: 50, sharers: [][2]int{{5, 20}},
		challenge: true, who: challenge.Everyone, silent: 6, lapsers: 6, paired: true,
	},
	{
		name: "one instance, random, no renewal, challenge everyone", instances: 1, method: waitingroom.Random, renew: false,
		session: 2 * time.Minute, total: 20, perMinute: 6, minutes: 12,
		honest: 50, sharers: [][2]int{{5, 20}},
		challenge: true, who: challenge.Everyone, silent: 6, lapsers: 6, paired: true,
	},
	{
		name: "four instances, fifo, renewal, challenge", instances: 4, method: waitingroom.FIFO, renew: true,
		session: time.Minute, total: 20, perMinute: 6, minutes: 10,
		honest: 45, replayers: 2, cloners: [][2]int{{5, 40}}, sharers: [][2]int{{5, 40}}, revokers: 4,
		challenge: true, silent: 6, lapsers: 6,
	},
	{
		name: "four instances, random, renewal, challenge everyone", instances: 4, method: waitingroom.Random, renew: true,
		session: time.Minute, total: 20, perMinute: 6, minutes: 10,
		honest: 45, replayers: 2, cloners: [][2]int{{5, 40}}, sharers: [][2]int{{5, 40}},
		challenge: true, who: challenge.Everyone, silent: 6, lapsers: 6,
	},
}

// attackerBase is added to the index of a client that never answers, in
// its requests' X-Client header.
const attackerBase = 1 << 20

// populateAttackers adds tc.silent and tc.lapsers clients, at times of
// their own draws.
func (m *model) populateAttackers() {
	span := m.end - m.start
	at := func(hi int64) int64 {
		tick := modelTick.Milliseconds()
		return m.start + m.arng.Int64N(hi+1)/tick*tick
	}
	for range m.tc.silent {
		c := &mClient{i: attackerBase + len(m.attackers), kind: kSilent, tabs: 1, keep: true}
		c.next[0] = at(span * 55 / 100)
		m.attackers = append(m.attackers, c)
	}
	for range m.tc.lapsers {
		c := &mClient{i: attackerBase + len(m.attackers), kind: kLapser, tabs: 1}
		c.next[0] = at(span * 30 / 100)
		m.attackers = append(m.attackers, c)
	}
}

// actAttacker lets a client that never answers act.
func (m *model) actAttacker(c *mClient) {
	now := m.now()
	m.requests++
	inst := m.arng.IntN(len(m.rooms))
	cookie := c.jar
	if c.kind == kLapser {
		cookie = c.fixed
	}
	r := m.sendWith(c, inst, cookie, "", "", "")
	if r.outcome == mAdmitted {
		if cookie != "" || m.tc.who != challenge.Queued {
			m.fail("a client that never answers the challenge was let in", "%s (client %d) on instance %d", c.kind, c.i, inst)
		}
		m.straightIn++
		c.gone = true
		return
	}
	switch c.kind {
	case kSilent:
		m.keepCookie(c, r)
		m.noteChances([]mResp{r}, false, false, false)
		c.next[0] = now + max(r.refresh, 1000)
	case kLapser:
		m.noteChances([]mResp{r}, false, false, true)
		if c.fixed == "" {
			// Away until the place lapsed, and a little more.
			c.fixed = r.set
			c.next[0] = now + modelHold.Milliseconds() + 5000 + m.arng.Int64N(55)*1000
			return
		}
		c.next[0] = now + 1000 + m.arng.Int64N(9)*250
	}
}

// puzzleOf returns the puzzle of the JSON waiting page w, or "".
func (m *model) puzzleOf(w *httptest.ResponseRecorder) string {
	var body struct {
		WaitingRoom struct {
			ChallengePuzzle string `json:"challengePuzzle"`
		} `json:"waitingRoom"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		m.t.Errorf("seed %d: a waiting page that is not JSON: %v", m.seed, err)
	}
	return body.WaitingRoom.ChallengePuzzle
}

// solved returns the answer to puzzle ("" for none).
func (m *model) solved(puzzle string) string {
	if puzzle == "" {
		return ""
	}
	a, err := challenge.Solve(context.Background(), puzzle)
	if err != nil {
		m.t.Errorf("seed %d: puzzle %q: %v", m.seed, puzzle, err)
	}
	return a
}

// compareAlone checks that the clients that never answer delayed no
// honest browser: each one let in by alone (the same seed without them)
// is let in by m no later than one refresh interval after.
func (m *model) compareAlone(alone *model) {
	first := func(x *model) map[int]int64 {
		in := map[int]int64{}
		for _, e := range x.episodes {
			if t, ok := in[e.client]; e.admitted && (!ok || e.end < t) {
				in[e.client] = e.end
			}
		}
		return in
	}
	with, without := first(m), first(alone)
	bound := modelRefresh.Milliseconds()
	var latest int64
	later, earlier := 0, 0
	for client, t0 := range without {
		t1, ok := with[client]
		if !ok {
			t1 = m.end
		}
		latest = max(latest, t1-t0)
		switch {
		case t1 > t0:
			later++
		case t1 < t0:
			earlier++
		}
		if t1 > t0+bound {
			m.fail("the clients that never answer delayed an honest browser", "client %d let in at %s, without them at %s", client, m.rel(t1), m.rel(t0))
		}
	}
	m.t.Logf("challenge: %d silent, %d lapsers, never let in; of %d honest browsers let in without them, %d later with them, %d earlier, the latest by %v (bound %v)",
		m.tc.silent, m.tc.lapsers, len(without), later, earlier, time.Duration(latest)*time.Millisecond, modelRefresh)
}

// logAttackers reports what became of the clients that never answer.
func (m *model) logAttackers() {
	if len(m.attackers) == 0 {
		return
	}
	k := waitingroom.Counters{}
	for _, rm := range m.rooms {
		c := rm.Stats().Counters
		k.ChallengesIssued += c.ChallengesIssued
		k.ChallengesPassed += c.ChallengesPassed
		k.ChallengesFailed += c.ChallengesFailed
		k.ChallengesParked += c.ChallengesParked
	}
	m.t.Logf("challenge: %d silent, %d lapsers: %d let straight in at their first request, none later; challenges issued %d, passed %d, failed %d, parked %d",
		m.tc.silent, m.tc.lapsers, m.straightIn, k.ChallengesIssued, k.ChallengesPassed, k.ChallengesFailed, k.ChallengesParked)
}
