#!/usr/bin/env bash
# Runs the tests of every module of the repository (each one go.work
# lists: the library, its stores, the proxy, metrics, the gin adapter,
# the integration tests and the examples), in the workspace. Tests that
# need Redis, PostgreSQL, MariaDB or Chromium skip with a message when they
# are not there; set WAITINGROOM_REQUIRE_SERVICES=1 to make that a failure.
# Extra arguments go to every `go test` (e.g. -run, -short).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/modules.sh || exit 1
status=0
for mod in "${modules[@]}"; do
  echo "== go test ($mod)"
  (cd "$mod" && go test -race -shuffle=on -count=1 "$@" ./...) || status=1
done
# The simulator at full size, without the race detector: under it (or
# with -short) its crowds shrink and some figures are only logged.
if [[ " $* " != *" -short "* ]]; then
  echo "== go test (./sim, full size)"
  go test -count=1 ./sim/ || status=1
fi
exit $status
