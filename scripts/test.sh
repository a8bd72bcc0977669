#!/usr/bin/env bash
# shellcheck disable=SC2317 # the lanes are called by name, as lane_$1
# Runs the tests of every module of the repository (each one go.work
# lists: the library, its stores, the proxy, metrics, the gin adapter,
# the integration tests and the examples). Tests that need Redis,
# PostgreSQL, MariaDB, Chromium, nginx or Caddy skip with a message when
# they are not there; set WAITINGROOM_REQUIRE_SERVICES=1 to make that a
# failure.
# Extra arguments go to every `go test` (e.g. -run, -short).
#
# The library's module, which requires no other module of the repository,
# is tested on its own (GOWORK=off), with the dependency versions its
# go.mod asks for, as a program importing it gets them; every other module
# in the workspace, against the others as they are in the checkout.
#
# The tests run in six lanes, each a series of `go test` commands:
#
#   faults       integration/faults: the fault scenarios, which mostly
#                wait on their timelines and on the servers they start
#   integration  the rest of the integration module (several processes,
#                the front door) and the examples (a browser)
#   library      the library's module, with the race detector
#   simulator    the simulator at full size, without it
#   fleets       the library's fleets and model simulated on one
#                goroutine, without it
#   modules      every other module (the proxy, the stores, metrics, the
#                adapters)
#
# The faults lane runs first, alone, without the race detector (the
# library's concurrency is raced in its own lane): its fleets of 40
# instances sync against deadlines, and beside the lanes bound by the CPU
# their syncs missed them before any fault (with the detector, three
# fleet scenarios in one run; without it, one in two runs; and, with the
# lanes bound by the CPU in the idle scheduling class, which yields the
# CPU to them at once, in one of four runs beside every lane and in the
# one run beside the simulator alone). Started together, the lanes also
# did less work: every lane from the start, the tests took 910 to 1,049
# s, against 945 to 1,128 for CI in all this way.
# The other five
# then run side by side; the integration lane is bound by real time, the
# others mostly by the CPU: these run at a lower priority (nice), so that
# its timelines get the CPU when they need it. Each lane's
# output is printed whole when the lane ends, with how long each command
# and the lane took and the CPU time each command used; the script exits
# non-zero if any command of any lane failed. TEST_SERIAL=1 runs the
# lanes one after the other instead, printing as they go.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/modules.sh || exit 1
# Builds without the checkout's path in them: the build cache then serves
# a clone in another directory (CI's, a second worktree) the packages a
# build of the same code elsewhere compiled. With the path in them, a
# fresh clone compiled every package of the repository again: its tests
# and vet took 381 CPU seconds to build, against 106 so.
export GOFLAGS="${GOFLAGS:-} -trimpath"
# -short is the quick loop of a change in progress: smaller crowds, no
# full-size simulator run, and no race detector (which multiplies the
# simulator's time by five). The full command, as CI runs it, keeps them.
race=(-race)
short=
if [[ " $* " == *" -short "* ]]; then
  race=()
  short=1
fi
args=("$@")
# Every go test has 40 minutes rather than its default 10: the lanes share
# two cores, and the fault scenarios or the library under the race
# detector alone can near 10 on a busy machine. On a machine whose build
# cache is empty, the lanes build Caddy and the examples with the race
# detector beside the simulator, which took 20 minutes to get 365 CPU
# seconds (the run of a warm cache, about 340 in 11 minutes).
# The niceness of the lanes bound by the CPU: enough to yield to the
# timelines, not so much that their own deadlines (a store's conformance
# under concurrent updates, 30 s) starve behind every other process.
cpu_nice=5
# The collector's target for the lanes that simulate rooms on one
# goroutine (the simulator, the fleets): they allocate fast and keep
# little, so the collector ran often for nothing. At 400 rather than 100,
# a 40-instance fairness run of the simulator took 24 % less CPU (16.7
# against 22.0 s, three runs each, quiet machine), its peak memory 82
# rather than 40 MB.
sim_gogc=400

# children_cpu: sets cpu to the CPU seconds (user and system) of the
# shell's children so far, those they waited for included, from the
# builtin times (in this shell, not in a subshell of its own).
children_cpu() {
  local f="${TMPDIR:-/tmp}/waitingroom-test-cpu.$BASHPID"
  times >"$f"
  cpu=$(awk 'END { s = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } printf "%d", s }' "$f")
  rm -f "$f"
}

# gotest LABEL DIR COMMAND...: runs COMMAND (a go test) in DIR at the
# lane's niceness, saying what it runs, how long it took and the CPU it
# used (builds included); a failure sets the lane's status and the lane
# goes on.
lane_status=0
lane_nice=0
gotest() {
  local label=$1 dir=$2 start=$SECONDS cpu cpu0 result=ok
  shift 2
  children_cpu
  cpu0=$cpu
  echo "== go test ($label)"
  if ! (cd "$dir" && nice -n "$lane_nice" "$@"); then
    result=FAIL
    lane_status=1
  fi
  children_cpu
  echo "-- $result: $label ($((SECONDS - start)) s, CPU $((cpu - cpu0)) s)"
}

lane_faults() {
  # -parallel 16: the three-instance suites side by side, beside the
  # two SQL fleets and the Redis fleets (two at a time, fleetTurn in
  # fleet_test.go), rather than two tests at a time; a fleet waiting for
  # its turn holds a place too.
  gotest "./integration/faults, no race detector" ./integration \
    go test -shuffle=on -count=1 -parallel 16 -timeout=40m ${args[@]+"${args[@]}"} ./faults
}

lane_integration() {
  local pkgs
  pkgs=$(cd integration && go list ./... | grep -v '/integration/faults$')
  # shellcheck disable=SC2086
  gotest "./integration, but for ./faults" ./integration \
    go test ${race[@]+"${race[@]}"} -shuffle=on -count=1 -timeout=40m ${args[@]+"${args[@]}"} $pkgs
  gotest "./examples" ./examples \
    go test ${race[@]+"${race[@]}"} -shuffle=on -count=1 -timeout=40m ${args[@]+"${args[@]}"} ./...
}

lane_fleets() {
  # The library's fleets and audits simulated on one goroutine (TestFleet*,
  # TestSurge*, Test*Audit and the others onOneGoroutine skips under the
  # race detector: their names are in -run) and the model test's three
  # seeds (one under it), without it, bound by the CPU. At the end of the
  # integration lane, after its tests bound by real time, they ended last
  # with the simulator (the lanes 787 s, against 723 for the same work in
  # the library's lane). With -short everything ran without it in the
  # library's lane.
  lane_nice=$cpu_nice
  if [[ -z $short ]]; then
    gotest "., the simulated fleets and the model, no race detector, GOWORK=off" . \
      env GOWORK=off GOGC=$sim_gogc go test -count=1 -timeout=40m -run '^Test(Fleet|Surge|LotteryAudit|ShuffleAudit|Model$|StateRollbackKeepsLimits$|StoppedInstanceGrantCountsAsTaken$|ClockSkew$|ShuffleAtStart$)' ${args[@]+"${args[@]}"} .
  fi
}

lane_library() {
  lane_nice=$cpu_nice
  local pkgs
  # The simulator runs in a lane of its own, at full size without the
  # race detector: it drives the rooms from one goroutine, where the
  # detector finds nothing and costs minutes.
  pkgs=$(GOWORK=off go list ./...)
  if [[ -z $short ]]; then
    pkgs=$(grep -v '/sim$' <<<"$pkgs")
  fi
  # shellcheck disable=SC2086
  gotest ". (GOWORK=off)" . \
    env GOWORK=off go test ${race[@]+"${race[@]}"} -shuffle=on -count=1 -timeout=40m ${args[@]+"${args[@]}"} $pkgs
}

lane_simulator() {
  lane_nice=$cpu_nice
  # The simulator at full size, without the race detector (with -short it
  # ran in the library's lane).
  if [[ -z $short ]]; then
    gotest "./sim, full size, GOWORK=off" . \
      env GOWORK=off GOGC=$sim_gogc go test -count=1 -timeout=40m ./sim/
  fi
}

lane_modules() {
  lane_nice=$cpu_nice
  local mod
  for mod in "${modules[@]}"; do
    case $mod in
      . | ./integration | ./examples) ;; # in the lanes above
      ./wrcaddy)
        # Without the race detector: building Caddy's dependencies with it
        # takes minutes of CI for a few hundred lines whose concurrency is
        # the library's (raced in its own module) and Caddy's.
        gotest "$mod, no race detector" "$mod" \
          go test -shuffle=on -count=1 -timeout=40m ${args[@]+"${args[@]}"} ./...
        ;;
      *)
        gotest "$mod" "$mod" \
          go test ${race[@]+"${race[@]}"} -shuffle=on -count=1 -timeout=40m ${args[@]+"${args[@]}"} ./...
        ;;
    esac
  done
}

alone=(faults)
lanes=(integration library simulator fleets modules)

# run_lane NAME: runs the lane and exits with its status.
run_lane() {
  "lane_$1"
  exit "$lane_status"
}

# run_alone NAME...: runs the lanes one after the other, printing as they
# go.
run_alone() {
  local name start result
  for name in "$@"; do
    start=$SECONDS
    echo "==== lane $name"
    if (run_lane "$name"); then result=ok; else result=FAIL status=1; fi
    summary+=("$(printf '%-12s %-4s %4d s' "$name" "$result" $((SECONDS - start)))")
  done
}

status=0
summary=()
if [[ ${TEST_SERIAL:-} == 1 ]]; then
  run_alone "${alone[@]}" "${lanes[@]}"
else
  # The lanes that run alone do so without job control, as in the serial
  # run: in a process group of their own, the fault scenarios' run ended
  # the whole script.
  run_alone "${alone[@]}"
  # LANES_HOOK, if set, is a command run once the lanes that run alone are
  # done, before the others start (.ci/run gives its checks, which yielded
  # to the fault scenarios' timelines, the CPU lanes' priority then).
  if [[ -n ${LANES_HOOK:-} ]]; then bash -c "$LANES_HOOK" || true; fi
  # Each lane in a process group of its own (job control), so that an
  # interrupted run stops every go test it started.
  set -m
  logs=$(mktemp -d)
  declare -A lane_of=()
  stop_lanes() {
    local pid
    for pid in "${!lane_of[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  }
  trap 'stop_lanes; rm -rf "$logs"' EXIT
  trap 'exit 130' INT TERM
  start=$SECONDS
  for name in "${lanes[@]}"; do
    (run_lane "$name") >"$logs/$name" 2>&1 </dev/null &
    lane_of[$!]=$name
  done
  echo "== ${#lanes[@]} lanes side by side (${lanes[*]}); each one's output when it ends"
  while [[ ${#lane_of[@]} -gt 0 ]]; do
    if wait -n -p pid "${!lane_of[@]}"; then result=ok; else result=FAIL status=1; fi
    name=${lane_of[$pid]}
    unset "lane_of[$pid]"
    printf '\n==== lane %s: %s, %d s\n' "$name" "$result" $((SECONDS - start))
    cat "$logs/$name"
    summary+=("$(printf '%-12s %-4s %4d s' "$name" "$result" $((SECONDS - start)))")
  done
fi
printf '\n==== lanes (name, result, seconds from the start):\n'
printf '  %s\n' "${summary[@]}"
exit $status
