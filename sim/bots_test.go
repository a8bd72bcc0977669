package sim

import (
	"context"
	"math"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// botFarmOptions is the bot farm experiment: the write-up's crowd (at full
// size) and 100 fresh bot identities a minute, all while the room queues.
func botFarmOptions(full bool) Options {
	o := Experiment("")
	o.BotsPerMinute = 100
	if !full {
		o.Visitors, o.Arrivals, o.BotsPerMinute = 2_000, 6*time.Minute, 100
	}
	return o
}

// With a challenge the bot farm's admissions cost it at least ten times as
// much CPU per share, while the humans' mean wait moves by less than 5 %;
// the infinite queue lets no bot that skips it in.
func TestBotFarm(t *testing.T) {
	full := !testing.Short() && !raceEnabled
	ctx := context.Background()
	costs, err := MeasureBotCosts(ctx, 200*time.Millisecond)
	require.NoError(t, err)
	t.Logf("costs: request %v, %.3g hashes/s; solve 16: %v, 20: %v",
		costs.Request, costs.HashesPerSecond, costs.Solve(16), costs.Solve(20))
	o := botFarmOptions(full)
	if raceEnabled {
		// 250 arrivals a minute against 150 admissions: a queue.
		o.Visitors, o.Arrivals, o.BotsPerMinute = 600, 3*time.Minute, 50
		o.NewUsersPerMinute, o.TotalActiveUsers = 150, 1_000
	}
	rows, err := BotFarm(ctx, o, costs)
	require.NoError(t, err)
	t.Log("\n" + FormatBotTable(rows))
	byName := map[string]BotRow{}
	for _, r := range rows {
		byName[string(r.Method)+"/"+r.Scenario.Name] = r
	}
	for _, m := range []string{"fifo", "random"} {
		off := byName[m+"/off"]
		require.Greater(t, off.BotShare, 0.05, "%s: bots get in without a challenge", m)
		require.Greater(t, off.HumanMeanWaitSeconds, 30.0, "%s: a queue, or nothing is measured", m)
		for _, name := range []string{"pow 16", "pow 20"} {
			on := byName[m+"/"+name]
			fall := off.SharePerCPU / on.SharePerCPU
			assert.GreaterOrEqual(t, fall, 10.0, "%s %s: the bots' share per CPU-second falls tenfold", m, name)
			change := math.Abs(on.HumanMeanWaitSeconds-off.HumanMeanWaitSeconds) / off.HumanMeanWaitSeconds
			assert.Less(t, change, 0.05, "%s %s: humans wait as long", m, name)
			assert.Positive(t, on.Result.HumanSolves)
		}
		// Bots that skip the challenge get in only when there is room at
		// their first request: nobody is challenged then.
		inf := byName[m+"/infinite"]
		for _, v := range inf.Result.VisitorRecords {
			if v.Kind == Bot && v.WasAdmitted {
				require.Zero(t, v.Wait(), "%s: a bot that skipped the challenge got in after waiting", m)
			}
		}
		assert.Less(t, inf.BotShare, off.BotShare/2, "%s", m)
		assert.LessOrEqual(t, inf.HumanMeanWaitSeconds, off.HumanMeanWaitSeconds, "%s: humans wait no longer", m)
	}
	if path := os.Getenv("WAITINGROOM_BOTS_TABLE"); path != "" {
		require.NoError(t, os.WriteFile(path, []byte(FormatBotTable(rows)), 0o644))
	}
}
