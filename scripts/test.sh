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
#   simulator    the simulator at full size, without the race detector
#   integration  the rest of the integration module (several processes,
#                the front door) and the examples (a browser)
#   library      the library's module, with the race detector
#   fleets       the library's fleets simulated on one goroutine, without
#                it
#   modules      every other module (the proxy, the stores, metrics, the
#                adapters)
#
# The fault scenarios come first, beside the simulator only; the other
# four lanes start once they are done, beside whatever of the simulator
# is left. The faults lane runs at the highest priority the system allows
# (niceness -10 as root): its fleets of 40 instances sync against
# deadlines, which they missed before any fault beside lanes bound by the
# CPU at niceness 5, and once beside the integration lane at the same
# priority. It uses little of the CPU (about 100 s in 420), and the
# integration lane (real time: servers, a browser) little more; the four
# other lanes are bound by the CPU and run in the idle scheduling class
# (chrt --idle; niceness 19 where it is refused), on what the others,
# and CI's checks at niceness 19, leave. With every lane from the start,
# the whole took longer (1,049 s against 945): two cores shared by more
# lanes at once did less work each.
# Each lane's output is printed whole when the lane ends, with the time
# and CPU time of each command; the script exits non-zero if any command
# of any lane failed. TEST_SERIAL=1 runs the lanes one after the other
# instead, printing as they go.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/modules.sh || exit 1
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
# Every go test has 20 minutes rather than its default 10: the lanes share
# two cores, and the fault scenarios or the library under the race
# detector alone can near 10 on a busy machine.
# How the lanes bound by the CPU run their commands: in the idle
# scheduling class, where the system allows it, else at the lowest
# priority.
if chrt --idle 0 true 2>/dev/null; then
  cpu_class=(chrt --idle 0)
else
  cpu_class=(nice -n 19)
fi
# The fault scenarios' priority: above everything else where the system
# allows it (as root), so that neither the integration lane's processes
# nor CI's checks delay their fleets' syncs.
faults_class=()
if nice -n -10 true 2>/dev/null; then
  faults_class=(nice -n -10)
fi

# children_cpu: sets cpu to the CPU seconds (user and system) of the
# shell's children so far, those they waited for included, from the
# builtin times (in this shell, not in a subshell of its own).
children_cpu() {
  local f="${TMPDIR:-/tmp}/waitingroom-test-cpu.$BASHPID"
  times >"$f"
  cpu=$(awk 'END { s = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } printf "%d", s }' "$f")
  rm -f "$f"
}

# gotest LABEL DIR COMMAND...: runs COMMAND (a go test) in DIR in the
# lane's class, saying what it runs, how long it took and the CPU it
# used (builds included); a failure sets the lane's status and the lane
# goes on.
lane_status=0
lane_class=()
gotest() {
  local label=$1 dir=$2 start=$SECONDS cpu cpu0 result=ok
  shift 2
  children_cpu
  cpu0=$cpu
  echo "== go test ($label)"
  if ! (cd "$dir" && ${lane_class[@]+"${lane_class[@]}"} "$@"); then
    result=FAIL
    lane_status=1
  fi
  children_cpu
  echo "-- $result: $label ($((SECONDS - start)) s, CPU $((cpu - cpu0)) s)"
}

lane_faults() {
  lane_class=(${faults_class[@]+"${faults_class[@]}"})
  gotest "./integration/faults, no race detector" ./integration \
    go test -shuffle=on -count=1 -timeout=20m ${args[@]+"${args[@]}"} ./faults
}

lane_integration() {
  local pkgs
  pkgs=$(cd integration && go list ./... | grep -v '/integration/faults$')
  # shellcheck disable=SC2086
  gotest "./integration, but for ./faults" ./integration \
    go test ${race[@]+"${race[@]}"} -shuffle=on -count=1 -timeout=20m ${args[@]+"${args[@]}"} $pkgs
  gotest "./examples" ./examples \
    go test ${race[@]+"${race[@]}"} -shuffle=on -count=1 -timeout=20m ${args[@]+"${args[@]}"} ./...
}

lane_fleets() {
  lane_class=("${cpu_class[@]}")
  # The library's fleets and audits simulated on one goroutine
  # (TestFleet*, TestSurge*, Test*Audit: they skip under the race
  # detector), without it. With -short they ran without it in the
  # library's lane.
  if [[ -z $short ]]; then
    gotest "., the simulated fleets, no race detector, GOWORK=off" . \
      env GOWORK=off go test -count=1 -timeout=20m -run '^Test(Fleet|Surge|LotteryAudit|ShuffleAudit)' ${args[@]+"${args[@]}"} .
  fi
}

lane_library() {
  lane_class=("${cpu_class[@]}")
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
    env GOWORK=off go test ${race[@]+"${race[@]}"} -shuffle=on -count=1 -timeout=20m ${args[@]+"${args[@]}"} $pkgs
}

lane_simulator() {
  lane_class=("${cpu_class[@]}")
  # The simulator at full size, without the race detector (with -short it
  # ran in the library's lane).
  if [[ -z $short ]]; then
    gotest "./sim, full size, GOWORK=off" . \
      env GOWORK=off go test -count=1 -timeout=20m ./sim/
  fi
}

lane_modules() {
  lane_class=("${cpu_class[@]}")
  local mod
  for mod in "${modules[@]}"; do
    case $mod in
      . | ./integration | ./examples) ;; # in the lanes above
      ./wrcaddy)
        # Without the race detector: building Caddy's dependencies with it
        # takes minutes of CI for a few hundred lines whose concurrency is
        # the library's (raced in its own module) and Caddy's.
        gotest "$mod, no race detector" "$mod" \
          go test -shuffle=on -count=1 -timeout=20m ${args[@]+"${args[@]}"} ./...
        ;;
      *)
        gotest "$mod" "$mod" \
          go test ${race[@]+"${race[@]}"} -shuffle=on -count=1 -timeout=20m ${args[@]+"${args[@]}"} ./...
        ;;
    esac
  done
}

# The lanes that start at once, and those that start once the fault
# scenarios are done.
first=(faults simulator)
then=(integration library fleets modules)
lanes=("${first[@]}" "${then[@]}")

# run_lane NAME: runs the lane and exits with its status.
run_lane() {
  "lane_$1"
  exit "$lane_status"
}

status=0
summary=()
if [[ ${TEST_SERIAL:-} == 1 ]]; then
  for name in "${lanes[@]}"; do
    start=$SECONDS
    echo "==== lane $name"
    if (run_lane "$name"); then result=ok; else result=FAIL status=1; fi
    summary+=("$(printf '%-12s %-4s %4d s' "$name" "$result" $((SECONDS - start)))")
  done
else
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
  start_lanes() {
    local name
    for name in "$@"; do
      (run_lane "$name") >"$logs/$name" 2>&1 </dev/null &
      lane_of[$!]=$name
    done
    echo "== lanes started at $((SECONDS - start)) s: $*; each one's output when it ends"
  }
  start_lanes "${first[@]}"
  while [[ ${#lane_of[@]} -gt 0 ]]; do
    if wait -n -p pid "${!lane_of[@]}"; then result=ok; else result=FAIL status=1; fi
    name=${lane_of[$pid]}
    unset "lane_of[$pid]"
    printf '\n==== lane %s: %s, %d s\n' "$name" "$result" $((SECONDS - start))
    cat "$logs/$name"
    summary+=("$(printf '%-12s %-4s %4d s' "$name" "$result" $((SECONDS - start)))")
    if [[ $name == faults ]]; then start_lanes "${then[@]}"; fi
  done
fi
printf '\n==== lanes (name, result, seconds from the start):\n'
printf '  %s\n' "${summary[@]}"
exit $status
