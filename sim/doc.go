// Package sim is a deterministic simulator of crowds in front of a
// waiting room: the evidence that a waitingroom.Room keeps its limits, its
// order and its estimates.
//
// Run drives real Rooms, on a virtual clock, with virtual visitors. Every
// request goes through Room.Handler with the visitor's own cookie, as from
// a browser or a JSON client: the simulator reads the Set-Cookie, Refresh
// and JSON body of each response and acts on them. Visitors arrive by a
// schedule (uniformly, all at once, or a spike followed by a stream), come
// back when the page says, browse for a while once let in and then leave;
// some give up while waiting, some (spammers) ignore the refresh interval.
// Some cheat with the cookie: replayers resend the first waiting cookie
// the room gave them, ignoring newer ones, and cloner groups are several
// clients sharing one waiting cookie, one visitor in the figures. A bot
// farm (Options.BotsPerMinute) brings fresh identities that answer the
// room's challenge or not (Options.BotsSolve); BotFarm compares its
// share of admissions and its CPU cost with and without a challenge. The
// order and estimate figures judge the honest visitors only. Several Rooms can share one store, each request reaching one at random.
// The rooms' syncs happen at the same virtual instants, every second ± 10 %
// like their own background loop.
//
// A run is deterministic: the same Options and Seed give the same Result,
// whatever the machine, because every random choice (the rooms' refresh
// jitter included) comes from sources seeded by Options.Seed, the
// instances' IDs (which order a fleet's) are the run's own, and the run
// uses one goroutine (a fleet's aggregator reads the mailboxes on
// several, each into its place). It never sleeps: an hour of a million visitors takes
// well under a minute.
//
// The Result holds each visitor's record (arrival, admission, the
// estimates they were shown) and the figures computed from them:
//
//   - order: Kendall's tau between arrival second and admission time
//     (FIFO), and, for the visitors queued together at one instant, between
//     their arrival and admission orders with a chi-square test of
//     independence (random);
//   - fairness: the mean wait of spammers, replayers and cloner groups
//     against the polite visitors', and the admissions each replayer or
//     cloner group obtained (one place is one admission);
//   - limits: admissions (every one, a cheat's repeated ones included) and
//     peak active visitors minute by minute, and how fully the room used
//     its limits while demand exceeded them;
//   - estimates: the error of FIFO estimates and the calibration of random
//     ones (the share let in within the shown percentiles);
//   - abandonment: how long visitors who gave up still counted as waiting.
//
// Result marshals to JSON in the shape of the data files of the public
// write-up of the product this library re-implements ({"ArrivalMinutes":
// [...], "WaitTimeSeconds": [...]}) plus those figures; Experiment returns
// the Options of the write-up's experiment. The program in
// examples/simulate renders its heatmaps.
package sim
