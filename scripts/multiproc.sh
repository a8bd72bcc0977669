#!/usr/bin/env bash
# Runs three waiting-room processes on one Redis, by hand, and shows that
# they keep one set of limits between them.
#
#   scripts/multiproc.sh
#
# It builds cmd/waitingroom, starts three -demo proxies on 127.0.0.1 sharing
# the Redis at $REDIS_URL (a key prefix of their own, deleted at the end),
# sends $CLIENTS curl clients at them for $DURATION seconds and prints every
# two seconds how many sessions each demo application counts, and the sum.
# Client i always talks to process i mod 3, so each session is counted by
# one process only and the sum is the number of active sessions: it never
# exceeds TOTAL. (Clients that hop between processes are counted by every
# process they visit; /active?format=json lists the sessions so they can be
# merged, as integration/multiproc does.) Everything stops after DURATION
# seconds, or at Ctrl-C.
#
# Settings (environment):
#   REDIS_URL   redis://127.0.0.1:6379/0
#   PORTS       "18081 18082 18083"    loopback ports of the three processes
#   CLIENTS     60
#   DURATION    40                      seconds of load
#   TOTAL       20                      -total-active-users
#   PER_MINUTE  20                      -new-users-per-minute
set -euo pipefail
cd "$(dirname "$0")/.."

REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/0}
read -ra PORTS <<<"${PORTS:-18081 18082 18083}"
CLIENTS=${CLIENTS:-60}
DURATION=${DURATION:-40}
TOTAL=${TOTAL:-20}
PER_MINUTE=${PER_MINUTE:-20}

die() { echo "multiproc.sh: $*" >&2; exit 1; }
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

command -v curl >/dev/null || die "curl is required"
[ ${#PORTS[@]} -eq 3 ] || die "PORTS must list three ports"
case $REDIS_URL in
  redis://127.0.0.1[:/]*|redis://localhost[:/]*) ;;
  *) die "REDIS_URL must be a redis:// URL on 127.0.0.1 (got $REDIS_URL)" ;;
esac
redis_port=$(echo "$REDIS_URL" | sed -E 's#^redis://[^:/]+:?([0-9]*).*#\1#')
port_open "${redis_port:-6379}" || die "no Redis on 127.0.0.1:${redis_port:-6379}; start one: redis-server --port ${redis_port:-6379} --bind 127.0.0.1 --save '' --appendonly no"
for p in "${PORTS[@]}"; do
  ! port_open "$p" || die "port $p is in use; choose others with PORTS=\"a b c\""
done

work=$(mktemp -d)
prefix="wrdemo:$(date +%s)-$$:"
pids=()
client_pids=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${client_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if command -v redis-cli >/dev/null; then
    redis-cli -u "$REDIS_URL" --scan --pattern "${prefix}*" | xargs -r redis-cli -u "$REDIS_URL" del >/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "building cmd/waitingroom"
go build -o "$work/waitingroom" ./cmd/waitingroom
key=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')

for i in 0 1 2; do
  "$work/waitingroom" -demo -listen "127.0.0.1:${PORTS[$i]}" -key "$key" -name multiproc \
    -store "$REDIS_URL" -store-prefix "$prefix" \
    -total-active-users "$TOTAL" -new-users-per-minute "$PER_MINUTE" \
    -session-duration 1m -refresh-interval 1s -sync-interval 200ms \
    >"$work/process$((i + 1)).log" 2>&1 &
  pids+=($!)
done
for i in 0 1 2; do
  for _ in $(seq 1 100); do
    curl -fs "http://127.0.0.1:${PORTS[$i]}/healthz" >/dev/null && break
    kill -0 "${pids[$i]}" 2>/dev/null || { cat "$work/process$((i + 1)).log" >&2; die "process $((i + 1)) exited"; }
    sleep 0.1
  done
done
echo "three processes on $REDIS_URL (key prefix $prefix): http://127.0.0.1:${PORTS[0]} http://127.0.0.1:${PORTS[1]} http://127.0.0.1:${PORTS[2]}"
echo "limits: $TOTAL active, $PER_MINUTE new per minute; $CLIENTS clients for ${DURATION}s"

end=$(($(date +%s) + DURATION))
# client N: keeps its cookies in a file of its own, always uses the same
# process, browses every second once let in and otherwise comes back when
# the waiting page's Refresh header says.
client() {
  local n=$1 base="http://127.0.0.1:${PORTS[$(($1 % 3))]}" jar="$work/jar$1" refresh
  sleep "0.$((RANDOM % 10))"
  while [ "$(date +%s)" -lt "$end" ]; do
    refresh=$(curl -s -o /dev/null -D - -b "$jar" -c "$jar" --max-time 5 "$base/" |
      tr -d '\r' | awk -F': ' 'tolower($1) == "refresh" { print $2 }')
    sleep "${refresh:-1}"
  done
}
for n in $(seq 1 "$CLIENTS"); do
  client "$n" &
  client_pids+=($!)
done

printf '\n%-9s %10s %10s %10s %6s\n' time process1 process2 process3 sum
while [ "$(date +%s)" -lt "$end" ]; do
  counts=()
  for p in "${PORTS[@]}"; do counts+=("$(curl -s --max-time 2 "http://127.0.0.1:$p/active" || echo '?')"); done
  sum=0
  for c in "${counts[@]}"; do [[ $c =~ ^[0-9]+$ ]] && sum=$((sum + c)); done
  printf '%-9s %10s %10s %10s %6s\n' "$(date +%T)" "${counts[@]}" "$sum"
  sleep 2
done
wait "${client_pids[@]}" 2>/dev/null || true
client_pids=()

echo
echo "admissions per minute, as each process saw them (/active?format=json):"
reports=()
for i in 0 1 2; do
  reports+=("$(curl -s --max-time 2 "http://127.0.0.1:${PORTS[$i]}/active?format=json")")
  echo "  process $((i + 1)): $(echo "${reports[$i]}" | grep -o '"admissionsPerMinute":{[^}]*}' | cut -d: -f2-)"
done
if command -v jq >/dev/null; then
  echo "  all three:  $(printf '%s\n' "${reports[@]}" | jq -sc '[.[].admissionsPerMinute | to_entries[]] | group_by(.key) | map({(.[0].key): (map(.value) | add)}) | add')"
fi
echo "logs: process1.log .. process3.log are removed on exit; the last lines of process 1:"
tail -n 3 "$work/process1.log" | sed 's/^/  /'
