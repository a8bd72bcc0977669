#!/bin/sh
# curl.sh waits in a waiting room with curl, as jsonclient does in Go: it
# keeps the room's cookie in a jar file (the place in the queue), asks for
# JSON, sleeps refreshIntervalSeconds between tries (earlier tries get no
# new chance), prints the estimate, and prints the page once let in.
#
#	sh examples/jsonclient/curl.sh http://127.0.0.1:8080/
#
# JSON_KEY names the top-level key of the room's answers (default
# waitingRoom). Needs only curl, sed and a POSIX shell.
set -eu
url=${1:-http://127.0.0.1:8080/}
key=${JSON_KEY:-waitingRoom}
jar=$(mktemp)
trap 'rm -f "$jar"' EXIT

# field NAME: the value of a JSON number, boolean or string field of $body.
field() {
	printf '%s' "$body" | sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p"
}

while :; do
	body=$(curl -sS -b "$jar" -c "$jar" -H 'Accept: application/json' "$url")
	case $body in
	*"\"$key\":{\"inWaitingRoom\":true"*) ;;
	*)
		echo "let in:" >&2
		printf '%s\n' "$body"
		exit 0
		;;
	esac
	if [ "$(field isRejectQueue)" = true ]; then
		echo "the site is closed to new visitors" >&2
		exit 1
	fi
	secs=$(field refreshIntervalSeconds)
	case $secs in '' | 0 | *[!0-9]*) secs=20 ;; esac
	if [ "$(field queueAll)" = true ]; then
		wait="the site lets no one in at the moment"
	elif [ "$(field waitTimeKnown)" = true ] && [ -n "$(field waitTimeFormatted)" ]; then
		wait="estimated wait $(field waitTimeFormatted)"
	else
		wait="no estimate yet"
	fi
	echo "waiting: $wait; next try in ${secs}s" >&2
	sleep "$secs"
done
