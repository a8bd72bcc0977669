#!/bin/sh
# compare.sh measures, on loopback only, what the waiting room costs an
# admitted visitor, alternating the configurations so that a busy machine
# spreads its noise over all of them:
#
#   wrk   wrk -t2 -c64 -d10s with an admitted cookie against load/wrkserver:
#         bare, behind the room with store/memstore, with store/redisstore;
#         besides wrk's figures, the server's CPU time per request (from
#         /proc, so Linux only), which a busy machine disturbs less than
#         throughput.
#   load  the load tool (64 visitors, no pause) against the bare upstream
#         (wrkserver -mode bare), a plain reverse proxy to it (the
#         baseline of a proxy), and cmd/waitingroom -upstream with the
#         memory store and with the Redis store.
#   crowd once, not compared: 200 visitors (a request every 200 ms for 5 s
#         once let in) for 20 s against cmd/waitingroom with room for 50
#         and a 5 s refresh interval: 50 get in, the rest wait.
#
# Run it from the examples directory:
#
#   sh load/compare.sh              # all three parts, 2 rounds
#   ROUNDS=3 sh load/compare.sh wrk # one part, 3 rounds
#
# Environment: ROUNDS (default 2), DURATION (default 10s), CONNS (wrk
# connections and load clients, default 64), REDIS_URL (default
# redis://127.0.0.1:6379/0; the Redis runs are skipped when redis-cli
# cannot reach it). Ports 127.0.0.1:18090-18093 must be free. Needs wrk
# (apt-get install -y wrk) and curl.
set -eu

ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-64}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/0}
PARTS=${*:-wrk load crowd}

bin=$(mktemp -d)
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	rm -rf "$bin"
}
trap cleanup EXIT INT TERM

go build -o "$bin/" ./load ./load/wrkserver
(cd .. && go build -o "$bin/" ./cmd/waitingroom)
WAITINGROOM_KEY=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
export WAITINGROOM_KEY

redis=yes
if ! redis-cli -u "$REDIS_URL" ping >/dev/null 2>&1; then
	echo "Redis not reachable at $REDIS_URL (or no redis-cli): Redis runs skipped" >&2
	redis=no
fi

# start ADDR CMD...: runs CMD in the background and waits until ADDR
# answers (any answer: /healthz of wrkserver goes through its room, which
# lets that visitor in like any other).
start() {
	addr=$1
	shift
	"$@" >/dev/null 2>&1 &
	pid=$!
	pids="$pids $pid"
	i=0
	until curl -s -o /dev/null "http://$addr/healthz"; do
		i=$((i + 1))
		if [ $i -gt 100 ]; then
			echo "$* did not start on $addr" >&2
			exit 1
		fi
		sleep 0.1
	done
}

# stop: stops the latest server started.
stop() {
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# cookie ADDR: an admitted visitor's cookie, as "name=value" ("" when none).
cookie() {
	curl -si "http://$1/" | sed -n 's/^[Ss]et-[Cc]ookie: \([^;]*\).*/\1/p' | head -n 1
}

# cpu_ticks PID: the user and system CPU time of PID so far, in clock ticks.
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}
hz=$(getconf CLK_TCK)

wrk_modes="bare memory"
[ $redis = yes ] && wrk_modes="$wrk_modes redis"

run_wrk() {
	for round in $(seq "$ROUNDS"); do
		for mode in $wrk_modes; do
			start 127.0.0.1:18091 "$bin/wrkserver" -mode "$mode" -listen 127.0.0.1:18091 -redis "$REDIS_URL"
			c=$(cookie 127.0.0.1:18091)
			if [ "$mode" != bare ] && [ -z "$c" ]; then
				echo "wrk $mode: no cookie" >&2
				exit 1
			fi
			t0=$(cpu_ticks "$pid")
			out=$(wrk -t2 -c"$CONNS" -d"$DURATION" --latency -H "Cookie: $c" http://127.0.0.1:18091/)
			t1=$(cpu_ticks "$pid")
			stop
			rps=$(echo "$out" | sed -n 's/^Requests\/sec: *//p')
			p50=$(echo "$out" | sed -n 's/^ *50% *//p')
			p99=$(echo "$out" | sed -n 's/^ *99% *//p')
			n=$(echo "$out" | sed -n 's/^ *\([0-9]*\) requests in.*/\1/p')
			non2xx=$(echo "$out" | sed -n 's/^ *Non-2xx or 3xx responses: *//p')
			cpu=$(awk -v a="$t0" -v b="$t1" -v n="$n" -v hz="$hz" 'BEGIN { printf "%.1f", (b - a) / hz * 1e6 / n }')
			echo "wrk round $round $mode: $rps req/s, p50 $p50, p99 $p99, non-2xx ${non2xx:-0}, server CPU $cpu µs/request"
		done
	done
}

run_load() {
	start 127.0.0.1:18090 "$bin/wrkserver" -mode bare -listen 127.0.0.1:18090
	up=$pid
	room="-total-active-users 100000 -new-users-per-minute 100000"
	for round in $(seq "$ROUNDS"); do
		for target in bare proxy memory redis; do
			case $target in
			bare) url=http://127.0.0.1:18090/ ;;
			proxy)
				start 127.0.0.1:18091 "$bin/wrkserver" -mode bare -listen 127.0.0.1:18091 -upstream http://127.0.0.1:18090
				url=http://127.0.0.1:18091/
				;;
			memory)
				# shellcheck disable=SC2086
				start 127.0.0.1:18092 "$bin/waitingroom" -upstream http://127.0.0.1:18090 -listen 127.0.0.1:18092 -store memory $room
				url=http://127.0.0.1:18092/
				;;
			redis)
				[ $redis = yes ] || continue
				name=compare-$$-$round
				# shellcheck disable=SC2086
				start 127.0.0.1:18093 "$bin/waitingroom" -upstream http://127.0.0.1:18090 -listen 127.0.0.1:18093 \
					-store "$REDIS_URL" -store-prefix waitingroom:compare: -name "$name" $room
				url=http://127.0.0.1:18093/
				;;
			esac
			echo "load round $round $target:"
			"$bin/load" -url "$url" -clients "$CONNS" -duration "$DURATION" -interval 0 -browse 1h | sed 's/^/    /'
			if [ "$target" != bare ]; then stop; fi
			if [ "$target" = redis ]; then redis-cli -u "$REDIS_URL" del "waitingroom:compare:$name" >/dev/null; fi
		done
	done
	kill "$up"
}

run_crowd() {
	start 127.0.0.1:18090 "$bin/wrkserver" -mode bare -listen 127.0.0.1:18090
	up=$pid
	start 127.0.0.1:18092 "$bin/waitingroom" -upstream http://127.0.0.1:18090 -listen 127.0.0.1:18092 \
		-total-active-users 50 -new-users-per-minute 50 -refresh-interval 5s
	echo "crowd:"
	"$bin/load" -url http://127.0.0.1:18092/ -clients 200 -duration 20s -interval 200ms -browse 5s | sed 's/^/    /'
	stop
	kill "$up"
}

for part in $PARTS; do
	case $part in
	wrk) run_wrk ;;
	load) run_load ;;
	crowd) run_crowd ;;
	*)
		echo "unknown part $part: want wrk, load or crowd" >&2
		exit 2
		;;
	esac
done
