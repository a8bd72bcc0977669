#!/usr/bin/env bash
# Soaks the waiting room: 10,000 virtual visitors against three
# cmd/waitingroom processes sharing one Redis, for a bounded time, with
# churn (arrivals, abandonment, revokes through the application's
# Waiting-Room-Command header, a switch to random queueing and back, lower
# limits and back, one process restarted). Every 10 s it prints the
# visitors' figures and, per process, the live heap, resident memory,
# goroutines and threads; at the end it checks the limits and exits with
# status 1 if they were exceeded or a visitor got a 5xx.
#
#   scripts/soak.sh [minutes]        (default 10)
#
# Everything runs on 127.0.0.1. The processes use a key prefix of their own
# on the Redis at $REDIS_ADDR, deleted at the end.
#
# Settings (environment):
#   REDIS_ADDR  127.0.0.1:6379
#   VISITORS    10000
#   PROCS       3
#   TOTAL       300     -total-active-users
#   PER_MINUTE  300     -new-users-per-minute
#   SOAK_ARGS           more flags for the soak program (go run ./integration/faults/soak -h)
set -euo pipefail
cd "$(dirname "$0")/.."

MINUTES=${1:-10}
REDIS_ADDR=${REDIS_ADDR:-127.0.0.1:6379}
VISITORS=${VISITORS:-10000}
PROCS=${PROCS:-3}
TOTAL=${TOTAL:-300}
PER_MINUTE=${PER_MINUTE:-300}

die() { echo "soak.sh: $*" >&2; exit 2; }
[[ $MINUTES =~ ^[0-9]+([.][0-9]+)?$ ]] || die "minutes must be a number, got '$MINUTES'"
case $REDIS_ADDR in
127.0.0.1:* | localhost:*) ;;
*) die "REDIS_ADDR must be on loopback, got $REDIS_ADDR" ;;
esac

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "soak.sh: building cmd/waitingroom and the soak program"
go build -o "$dir/waitingroom" ./cmd/waitingroom
go build -o "$dir/soak" ./integration/faults/soak

# The whole run is bounded: the soak program stops after MINUTES, and this
# bound catches a hang on the way out.
limit=$(awk -v m="$MINUTES" 'BEGIN { printf "%d", m * 60 + 120 }')
# shellcheck disable=SC2086 # SOAK_ARGS is a list of flags
timeout --signal=INT --kill-after=30 "$limit" "$dir/soak" -bin "$dir/waitingroom" -minutes "$MINUTES" \
	-redis "$REDIS_ADDR" -visitors "$VISITORS" -procs "$PROCS" \
	-total-active-users "$TOTAL" -new-users-per-minute "$PER_MINUTE" ${SOAK_ARGS:-}
