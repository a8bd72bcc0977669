#!/usr/bin/env bash
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
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/modules.sh || exit 1
# -short is the quick loop of a change in progress: smaller crowds, no
# full-size simulator run, and no race detector (which multiplies the
# simulator's time by five). The full command, as CI runs it, keeps them.
race=(-race)
if [[ " $* " == *" -short "* ]]; then
  race=()
fi
# wrcaddy runs without it: building Caddy's dependencies with the race
# detector takes minutes of CI for a few hundred lines whose concurrency
# is the library's (raced in its own module) and Caddy's.
status=0
for mod in "${modules[@]}"; do
  if [[ $mod == . ]]; then
    echo "== go test ($mod, GOWORK=off)"
    # The simulator runs below, at full size without the race detector:
    # it drives the rooms from one goroutine, where the detector finds
    # nothing and costs minutes.
    pkgs=$(GOWORK=off go list ./...)
    if [[ ${#race[@]} -gt 0 ]]; then
      pkgs=$(grep -v '/sim$' <<<"$pkgs")
    fi
    # shellcheck disable=SC2086
    GOWORK=off go test ${race[@]+"${race[@]}"} -shuffle=on -count=1 "$@" $pkgs || status=1
  elif [[ $mod == ./wrcaddy ]]; then
    echo "== go test ($mod, no race detector)"
    (cd "$mod" && go test -shuffle=on -count=1 "$@" ./...) || status=1
  else
    echo "== go test ($mod)"
    (cd "$mod" && go test ${race[@]+"${race[@]}"} -shuffle=on -count=1 "$@" ./...) || status=1
  fi
done
# The simulator at full size, and the library's fleets simulated on one
# goroutine (TestFleet*, TestSurge*: they skip under the race detector),
# without the race detector. With -short everything ran without it above.
if [[ " $* " != *" -short "* ]]; then
  echo "== go test (./sim, full size, GOWORK=off)"
  GOWORK=off go test -count=1 ./sim/ || status=1
  echo "== go test (., the simulated fleets, no race detector, GOWORK=off)"
  GOWORK=off go test -count=1 -run '^Test(Fleet|Surge)' "$@" . || status=1
fi
exit $status
