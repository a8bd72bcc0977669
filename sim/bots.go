package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-waitingroom/waitingroom"
	"github.com/go-waitingroom/waitingroom/challenge"
	"github.com/go-waitingroom/waitingroom/store/memstore"
)

// BotCosts are what a bot's work costs in CPU time, measured on the
// machine that runs MeasureBotCosts.
type BotCosts struct {
	// Request is the time of one request as a bot makes it, measured in
	// process: building it, the room deciding it and writing its JSON
	// waiting page, and reading that page. The room's share makes it an
	// upper bound of the bot's own cost, which makes the comparison with
	// a challenge conservative.
	Request time.Duration
	// HashesPerSecond is the rate of challenge.Solve's hashes on
	// one core.
	HashesPerSecond float64
}

// Solve is the expected time of solving a proof of work of the given
// difficulty: 2^difficulty hashes (the mean of the geometric number of
// tries) at HashesPerSecond.
func (c BotCosts) Solve(difficulty int) time.Duration {
	if difficulty <= 0 || c.HashesPerSecond <= 0 {
		return 0
	}
	return time.Duration(math.Ldexp(1, difficulty) / c.HashesPerSecond * float64(time.Second))
}

// MeasureBotCosts measures BotCosts, spending about budget on each of the
// two. It uses the calling goroutine only.
func MeasureBotCosts(ctx context.Context, budget time.Duration) (BotCosts, error) {
	var c BotCosts
	// The hash rate: every try of challenge.Solve is one hash, and the
	// answer's number says how many it took.
	var hashes float64
	start := time.Now()
	for i := 0; time.Since(start) < budget; i++ {
		a, err := challenge.Solve(ctx, "bench"+strconv.Itoa(i)+".0.12")
		if err != nil {
			return c, err
		}
		n, _ := strconv.ParseFloat(a[strings.LastIndexByte(a, '.')+1:], 64)
		hashes += n + 1
	}
	c.HashesPerSecond = hashes / time.Since(start).Seconds()

	rm, err := waitingroom.New(waitingroom.Config{
		Name: "bench", Settings: waitingroom.Settings{TotalActiveUsers: 1, NewUsersPerMinute: 1, QueueAll: true},
		Keys: [][]byte{simKey}, SyncInterval: -1,
	}, memstore.New())
	if err != nil {
		return c, err
	}
	defer rm.Close()
	if err := rm.Sync(ctx); err != nil {
		return c, err
	}
	h := rm.Handler(http.NotFoundHandler())
	var reqs requests
	req := reqs.get()
	w := newResponse()
	n := 0
	start = time.Now()
	for ; time.Since(start) < budget; n++ {
		w.reset()
		h.ServeHTTP(w, req)
		takeCookie(w, req)
		if _, ok := readPage(w); !ok {
			return c, errors.New("sim: measuring a request: not a waiting page")
		}
	}
	c.Request = time.Since(start) / time.Duration(max(n, 1))
	return c, nil
}

// MeasureSolve returns the mean time of n real solves of puzzles of the
// given difficulty (each a different puzzle), on the calling goroutine: a
// check of BotCosts.Solve, which the geometric number of tries makes
// noisy for small n.
func MeasureSolve(ctx context.Context, difficulty, n int) (time.Duration, error) {
	start := time.Now()
	for i := range n {
		if _, err := challenge.Solve(ctx, "solve"+strconv.Itoa(i)+".0."+strconv.Itoa(difficulty)); err != nil {
			return 0, err
		}
	}
	return time.Since(start) / time.Duration(max(n, 1)), nil
}

// BotScenario is one way of meeting a bot farm.
type BotScenario struct {
	// Name is the scenario's name in the table.
	Name string
	// Difficulty is the proof of work's difficulty each solve is charged
	// at; 0 for no challenge. The run's rooms use difficulty 1, so that a
	// run of thousands of solves is quick: the room's behaviour does not
	// depend on it, only the cost does.
	Difficulty int
	// Infinite parks those who fail (challenge.Policy.OnFail infinite),
	// and the bots do not answer.
	Infinite bool
}

// BotScenarios are the scenarios of BotFarm: no challenge, the proof of
// work at two difficulties (the default and 16 times the work), bots
// solving it, and the infinite queue with bots that do not.
var BotScenarios = []BotScenario{
	{Name: "off"},
	{Name: "pow 16", Difficulty: 16},
	{Name: "pow 20", Difficulty: 20},
	{Name: "infinite", Difficulty: 16, Infinite: true},
}

// BotRow is the outcome of one scenario under one queueing method.
type BotRow struct {
	Method   waitingroom.QueueingMethod
	Scenario BotScenario
	// BotShare is the bots' share of the visitors let in.
	BotShare float64
	// BotCPUSeconds is what the bots spent: their requests and their
	// solves at BotCosts; BotCPUPerAdmission that over the bots let in
	// (+Inf when none was).
	BotCPUSeconds, BotCPUPerAdmission float64
	// SharePerCPU is BotShare over BotCPUSeconds: what a CPU-second buys
	// the farm.
	SharePerCPU float64
	// HumanMeanWaitSeconds is the mean wait of the other visitors let in.
	HumanMeanWaitSeconds float64
	// Result is the run's.
	Result *Result
}

// BotFarm runs base (which should set BotsPerMinute) under FIFO and
// Random with each of BotScenarios, and charges the bots costs. The
// challenge applies to visitors who enter the queue; everyone but the
// bots answers it.
func BotFarm(ctx context.Context, base Options, costs BotCosts) ([]BotRow, error) {
	var rows []BotRow
	for _, m := range []waitingroom.QueueingMethod{waitingroom.FIFO, waitingroom.Random} {
		for _, sc := range BotScenarios {
			o := base
			o.Method = m
			o.BotsSolve = !sc.Infinite
			configure := base.Configure
			if sc.Difficulty > 0 {
				ch := &challenge.Policy{Kind: challenge.PoW, Difficulty: 1}
				if sc.Infinite {
					ch.OnFail = challenge.Infinite
				}
				o.Configure = func(c *waitingroom.Config) {
					if configure != nil {
						configure(c)
					}
					c.Challenge = ch
				}
			}
			res, err := Run(ctx, o)
			if err != nil {
				return nil, err
			}
			cpu := float64(res.BotRequests)*costs.Request.Seconds() + float64(res.BotSolves)*costs.Solve(sc.Difficulty).Seconds()
			row := BotRow{Method: m, Scenario: sc, BotShare: res.BotShare, BotCPUSeconds: cpu,
				HumanMeanWaitSeconds: res.MeanWaitPoliteSeconds, Result: res, BotCPUPerAdmission: math.Inf(1)}
			if res.BotAdmitted > 0 {
				row.BotCPUPerAdmission = cpu / float64(res.BotAdmitted)
			}
			if cpu > 0 {
				row.SharePerCPU = res.BotShare / cpu
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// FormatBotTable formats rows (BotFarm's, in its order) as the Markdown
// table of docs/bots.md.
func FormatBotTable(rows []BotRow) string {
	var b strings.Builder
	b.WriteString("| method | challenge | bots' share | bot CPU-s per admission | share per CPU-s | fall vs off | humans' mean wait | change |\n|---|---|---|---|---|---|---|---|\n")
	var off BotRow
	for _, r := range rows {
		if r.Scenario.Name == "off" {
			off = r
		}
		per := "—"
		if !math.IsInf(r.BotCPUPerAdmission, 1) {
			per = fmt.Sprintf("%.3g", r.BotCPUPerAdmission)
		}
		fall := "—"
		switch {
		case r.Scenario.Name == "off":
		case r.SharePerCPU == 0:
			fall = "∞"
		default:
			fall = fmt.Sprintf("%.0f×", off.SharePerCPU/r.SharePerCPU)
		}
		change := "—"
		if off.HumanMeanWaitSeconds > 0 {
			change = fmt.Sprintf("%+.1f %%", 100*(r.HumanMeanWaitSeconds-off.HumanMeanWaitSeconds)/off.HumanMeanWaitSeconds)
		}
		fmt.Fprintf(&b, "| %s | %s | %.1f %% | %s | %.3g | %s | %.0f s | %s |\n", r.Method, r.Scenario.Name,
			100*r.BotShare, per, r.SharePerCPU, fall, r.HumanMeanWaitSeconds, change)
	}
	return b.String()
}
