#!/bin/sh
# bench.sh measures, on loopback only, what the room costs an admitted
# visitor in front of nginx and Caddy, alternating the configurations
# round by round so that a busy machine spreads its noise over all of
# them:
#
#   upstream        wrk straight at the application (examples/load/wrkserver -mode bare)
#   nginx           nginx → application
#   nginx+auth      nginx with docs/forward-auth/nginx/nginx.conf → application,
#                   cmd/waitingroom -forward-auth answering the auth requests
#   nginx+cache     the same with nginx/cache.conf, the optional cache of admitted answers
#   nginx+pass      the same with nginx/pass.conf, passes (a room with a pass secret,
#                   nginx checking the passes itself)
#   nginx+proxy     nginx → cmd/waitingroom -upstream (a second proxy) → application
#   caddy           Caddy (built with wrcaddy) → application
#   caddy+module    the same Caddy with the waitingroom directive → application
#
# Every room (memory store) has room for everyone; each run starts from an
# admitted visitor's cookie (fetched fresh for the run), and keeps the
# cookies the answers set, as a browser does (the pass, with passes):
# wrk -t2 -cCONNS -dDURATION --latency -s cookies.lua, the same script for
# every configuration. It prints each run, then
# per configuration the median and range of req/s and the medians of p50
# and p99, and the ratios of each round (median and range).
#
# Run it from the repository's root:
#
#   sh integration/frontdoor/bench.sh
#   ROUNDS=5 DURATION=10s sh integration/frontdoor/bench.sh
#
# Environment: ROUNDS (default 3), DURATION (default 5s), CONNS (default
# 64), ONLY (the configurations to run, by name, space-separated; default
# all: the summary's rows and ratios of the others are empty). Ports 127.0.0.1:18180-18190 must be free. Needs wrk, curl, nginx
# and Go (it builds Caddy with the module).
set -eu

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-64}
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

dir=$(mktemp -d)
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	for f in "$dir"/nginx.pid "$dir"/nginx-*/nginx.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
	sleep 0.2
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM

echo "building cmd/waitingroom, examples/load/wrkserver and Caddy with wrcaddy" >&2
go build -o "$dir/" ./cmd/waitingroom
(cd examples && go build -o "$dir/" ./load/wrkserver)
(cd wrcaddy && go build -o "$dir/caddy" ./cmd/caddy)
WAITINGROOM_KEY=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
export WAITINGROOM_KEY

# The addresses.
APP=127.0.0.1:18180
ROOM=127.0.0.1:18181
PROXY=127.0.0.1:18182
NGINX_BARE=127.0.0.1:18183
NGINX_AUTH=127.0.0.1:18184
NGINX_PROXY=127.0.0.1:18185
CADDY_BARE=127.0.0.1:18186
CADDY_MODULE=127.0.0.1:18187
NGINX_CACHE=127.0.0.1:18188
NGINX_PASS=127.0.0.1:18189
ROOM_PASS=127.0.0.1:18190
PASS_SECRET=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')

# wait_port ADDR: until ADDR answers HTTP.
wait_port() {
	i=0
	until curl -s -o /dev/null "http://$1/" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 200 ] || { echo "nothing on $1" >&2; exit 1; }
		sleep 0.05
	done
}

bg() {
	"$@" >>"$dir/servers.log" 2>&1 &
	pids="$pids $!"
}

limits="-total-active-users 1000000 -new-users-per-minute 1000000"
bg "$dir/wrkserver" -mode bare -listen $APP
# shellcheck disable=SC2086
bg "$dir/waitingroom" -forward-auth -front-door nginx -listen $ROOM -trusted-proxies 127.0.0.1/32 $limits
# shellcheck disable=SC2086
bg env WAITINGROOM_PASS_SECRET="$PASS_SECRET" "$dir/waitingroom" -forward-auth -front-door nginx -listen $ROOM_PASS -trusted-proxies 127.0.0.1/32 $limits
# shellcheck disable=SC2086
bg "$dir/waitingroom" -upstream http://$APP -listen $PROXY $limits
wait_port $APP
wait_port $ROOM
wait_port $ROOM_PASS
wait_port $PROXY

# nginx: the documented configurations (docs/forward-auth/nginx/), each
# in a prefix of its own with only its addresses changed, and two plain
# proxies. The prefixes must be readable by nginx's workers, which run as
# nobody when nginx starts as root.
chmod 755 "$dir"
# docconf FILE PREFIX LISTEN ROOM: docs/forward-auth/nginx/FILE in PREFIX,
# serving on LISTEN in front of the room at ROOM.
docconf() {
	mkdir -p "$2"
	sed -e "s/127.0.0.1:8080/$3/; s/server 127.0.0.1:8081;/server $4;/; s/127.0.0.1:3000/$APP/; s/PASS_SECRET/$PASS_SECRET/" \
		"docs/forward-auth/nginx/$1" >"$2/nginx.conf"
	"$NGINX" -p "$2" -c nginx.conf -e stderr
}
docconf nginx.conf "$dir/nginx-auth" $NGINX_AUTH $ROOM
docconf cache.conf "$dir/nginx-cache" $NGINX_CACHE $ROOM
docconf pass.conf "$dir/nginx-pass" $NGINX_PASS $ROOM_PASS
user=""
[ "$(id -u)" = 0 ] && user="user root;"
cat >"$dir/nginx.conf" <<EOF
$user
daemon on;
worker_processes 2;
pid $dir/nginx.pid;
error_log $dir/nginx-error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    upstream app {
        server $APP;
        keepalive 64;
    }
    upstream proxy {
        server $PROXY;
        keepalive 64;
    }
    server {
        listen $NGINX_BARE;
        location / {
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://app;
        }
    }
    server {
        listen $NGINX_PROXY;
        location / {
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://proxy;
        }
    }
}
EOF
"$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/nginx-error.log"
wait_port $NGINX_AUTH
wait_port $NGINX_BARE
wait_port $NGINX_CACHE
wait_port $NGINX_PASS

# The browser: it keeps the cookies the answers set. (wrk keeps the last
# Set-Cookie header of an answer: nginx adds the pass after the room's
# cookie, and the room's changes at most once a minute.)
cat >"$dir/cookies.lua" <<'EOF'
local jar, order, req = {}, {}, nil
function keep(c)
	local n, v = c:match("^%s*([^=;%s]+)=([^;]*)")
	if n then
		if jar[n] == nil then order[#order + 1] = n end
		jar[n], req = v, nil
	end
end
function init(args)
	for _, c in ipairs(args) do keep(c) end
end
function request()
	if not req then
		local parts = {}
		for _, n in ipairs(order) do
			if jar[n] ~= "" then parts[#parts + 1] = n .. "=" .. jar[n] end
		end
		req = wrk.format(nil, nil, { Cookie = table.concat(parts, "; ") })
	end
	return req
end
function response(status, headers, body)
	local c = headers["Set-Cookie"]
	if c then keep(c) end
end
EOF

cat >"$dir/Caddyfile" <<EOF
{
	admin off
	auto_https off
}
http://$CADDY_BARE {
	reverse_proxy $APP
}
http://$CADDY_MODULE {
	waitingroom {
		total_active_users 1000000
		new_users_per_minute 1000000
		key $WAITINGROOM_KEY
	}
	reverse_proxy $APP
}
EOF
bg env HOME="$dir" XDG_DATA_HOME="$dir" XDG_CONFIG_HOME="$dir" "$dir/caddy" run --config "$dir/Caddyfile" --adapter caddyfile
wait_port $CADDY_BARE
wait_port $CADDY_MODULE

# cookie ADDR: an admitted visitor's cookie, as "name=value" ("" when none).
cookie() {
	curl -si "http://$1/" | sed -n 's/^[Ss]et-[Cc]ookie: \(__waitingroom[^;]*\).*/\1/p' | head -n 1
}

configs="upstream:$APP nginx:$NGINX_BARE nginx+auth:$NGINX_AUTH nginx+cache:$NGINX_CACHE nginx+pass:$NGINX_PASS nginx+proxy:$NGINX_PROXY caddy:$CADDY_BARE caddy+module:$CADDY_MODULE"
if [ -n "${ONLY:-}" ]; then
	kept=""
	for c in $configs; do
		case " $ONLY " in *" ${c%%:*} "*) kept="$kept $c" ;; esac
	done
	configs=$kept
fi
results=$dir/results
: >"$results"
for round in $(seq "$ROUNDS"); do
	for c in $configs; do
		name=${c%%:*}
		addr=${c#*:}
		ck=$(cookie "$addr")
		case $name in
		*auth | *cache | *pass | *proxy | *module)
			[ -n "$ck" ] || { echo "$name: no cookie" >&2; exit 1; }
			;;
		esac
		out=$(wrk -t2 -c"$CONNS" -d"$DURATION" --latency -s "$dir/cookies.lua" "http://$addr/" "$ck")
		rps=$(echo "$out" | sed -n 's/^Requests\/sec: *//p')
		p50=$(echo "$out" | sed -n 's/^ *50% *//p')
		p99=$(echo "$out" | sed -n 's/^ *99% *//p')
		non2xx=$(echo "$out" | sed -n 's/^ *Non-2xx or 3xx responses: *//p')
		echo "round $round $name: $rps req/s, p50 $p50, p99 $p99, non-2xx ${non2xx:-0}"
		echo "$round $name $rps $p50 $p99 ${non2xx:-0}" >>"$results"
	done
done

# Summaries: latencies in ms, whatever unit wrk printed.
awk '
function ms(v) {
	if (v ~ /us$/) return substr(v, 1, length(v) - 2) / 1000
	if (v ~ /ms$/) return substr(v, 1, length(v) - 2) + 0
	if (v ~ /s$/) return substr(v, 1, length(v) - 1) * 1000
	return v + 0
}
function median(a, n,    i, j, t) {
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ r[$2, $1] = $3; l50[$2, $1] = ms($4); l99[$2, $1] = ms($5); rounds = $1 > rounds ? $1 : rounds; bad[$2] += $6 }
END {
	split("upstream nginx nginx+auth nginx+cache nginx+pass nginx+proxy caddy caddy+module", names, " ")
	printf "\n%-13s %10s %21s %9s %9s %8s\n", "config", "req/s", "range", "p50 ms", "p99 ms", "non-2xx"
	for (k = 1; k <= 8; k++) {
		c = names[k]; lo = 1e18; hi = 0
		if (!((c, 1) in r)) continue
		for (i = 1; i <= rounds; i++) { a[i] = r[c, i]; b[i] = l50[c, i]; d[i] = l99[c, i]; lo = a[i] < lo ? a[i] : lo; hi = a[i] > hi ? a[i] : hi }
		printf "%-13s %10.0f %10.0f–%-10.0f %9.2f %9.2f %8d\n", c, median(a, rounds), lo, hi, median(b, rounds), median(d, rounds), bad[c]
	}
	split("nginx+auth/nginx nginx+cache/nginx nginx+pass/nginx nginx+proxy/nginx nginx/upstream caddy+module/caddy caddy/upstream", pairs, " ")
	printf "\n%-20s %8s %15s\n", "ratio (per round)", "median", "range"
	for (k = 1; k <= 7; k++) {
		split(pairs[k], p, "/"); lo = 1e18; hi = 0
		if (!((p[1], 1) in r) || !((p[2], 1) in r)) continue
		for (i = 1; i <= rounds; i++) { x[i] = r[p[1], i] / r[p[2], i]; lo = x[i] < lo ? x[i] : lo; hi = x[i] > hi ? x[i] : hi }
		printf "%-20s %8.2f %7.2f–%-7.2f\n", pairs[k], median(x, rounds), lo, hi
	}
}' "$results"
