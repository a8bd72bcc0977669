#!/bin/sh
# watch.sh starts two instances of the multiinstance example on loopback,
# sharing one Redis, and shows with curl that they share one queue: once a
# visitor fills the room (one slot) on instance A, instance B queues the
# next visitor, and B lets in the visitor A admitted.
#
#	sh examples/multiinstance/watch.sh
#
# Needs go, curl and a Redis server (REDIS_URL, default
# redis://127.0.0.1:6379/0). Ports: PORT_A (8081) and PORT_B (8082).
set -eu
cd "$(dirname "$0")"

redis_url=${REDIS_URL:-redis://127.0.0.1:6379/0}
a=127.0.0.1:${PORT_A:-8081}
b=127.0.0.1:${PORT_B:-8082}
# Both instances need the same key; a fresh one for this run.
WAITINGROOM_KEY=${WAITINGROOM_KEY:-$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')}
export WAITINGROOM_KEY

tmp=$(mktemp -d)
pids=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "building…"
go build -o "$tmp/multiinstance" .

# A room of its own for this run (its state expires from Redis in 10 minutes).
room=watch-$$-$(date +%s)

# start ID ADDR: start an instance and wait until it has synced with Redis.
start() {
	"$tmp/multiinstance" -id "$1" -listen "$2" -redis "$redis_url" -name "$room" -ttl 10m \
		-total-active-users 1 -new-users-per-minute 1 2>"$tmp/$1.log" &
	pid=$!
	pids="$pids $pid"
	i=0
	until curl -fsS -o /dev/null "http://$2/healthz" 2>/dev/null; do
		if ! kill -0 "$pid" 2>/dev/null || [ $i -ge 100 ]; then
			echo "instance $1 did not start:" >&2
			cat "$tmp/$1.log" >&2
			exit 1
		fi
		i=$((i + 1))
		sleep 0.1
	done
	echo "instance $1 is up on http://$2 (room $room, 1 visitor at a time)"
}

# visit WHO ADDR: one request as visitor WHO, keeping their cookie jar;
# prints the instance that answered and what the visitor got.
visit() {
	out=$(curl -sS -D "$tmp/headers" -b "$tmp/$1.jar" -c "$tmp/$1.jar" \
		-H 'Accept: application/json' "http://$2/")
	inst=$(sed -n 's/^[Xx]-[Ii]nstance: *\([^[:space:]]*\).*/\1/p' "$tmp/headers")
	case $out in
	*'"inWaitingRoom":true'*)
		wait=$(printf '%s' "$out" | sed -n 's/.*"waitTimeFormatted":"\([^"]*\)".*/\1/p')
		secs=$(printf '%s' "$out" | sed -n 's/.*"refreshIntervalSeconds":\([0-9]*\).*/\1/p')
		out="waits (estimate: ${wait:-unknown}; come back in ${secs}s)"
		;;
	esac
	printf '  %s -> instance %s: %s\n' "$1" "$inst" "$out"
}

stats() {
	printf '  %s\n' "$(curl -sS "http://$1/stats")"
}

# A starts first and takes the room's one free slot.
start A "$a"
start B "$b"

echo
echo "visitor 1 goes to A, and is let in: the room is now full"
visit visitor1 "$a"
echo
echo "visitor 2 goes to B, which has let nobody in, and waits: the one slot is taken"
visit visitor2 "$b"
echo
echo "after the next sync (every second) both instances see the same counts"
sleep 2
stats "$a"
stats "$b"
echo
echo "visitor 1 comes back through B and is still in: one key, one room"
visit visitor1 "$b"
echo
echo "visitor 3 goes to A and waits too"
visit visitor3 "$a"
