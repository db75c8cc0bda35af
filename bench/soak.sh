#!/usr/bin/env bash
# Soak under faults: runs the real tokenproxy for SOAK_MINUTES against a token endpoint and
# an upstream that misbehave (bench/fault_server.py), with normal requests, faulty routes and
# clients that leave early mixed (bench/soak_load.py), and prints what the clients got, the
# proxy's descriptors and resident memory at rest before and after, and whether healthz
# always answered. Exits 1 when the descriptors grew by more than SOAK_MAX_FD_DRIFT or the
# resident memory by more than SOAK_MAX_RSS_DRIFT_KIB between the two rests, when a healthz
# probe went unanswered, when a client waited past SOAK_CLIENT_TIMEOUT, or when the proxy
# exited. Everything listens on 127.0.0.1; every process started here is stopped at exit.
#
#   bench/soak.sh                                   # 2 minutes, release build (scripts/build-release.sh)
#   SOAK_MINUTES=5 bench/soak.sh                    # longer
#   SOAK_BUILD=debug bench/soak.sh                  # the debug build (swift build), quicker to make
#   TOKENPROXY=path/to/tokenproxy bench/soak.sh     # a binary of your own
#
# Other settings (environment): SOAK_RATE (request starts a second, 100), SOAK_CLIENTS (48),
# SOAK_WARMUP (seconds, 20), SOAK_SETTLE (least seconds of rest before a figure, 8),
# SOAK_FLIP_SECONDS (8), SOAK_MAX_REQUESTS (1000000), SOAK_CLIENT_TIMEOUT (15),
# SOAK_MAX_FD_DRIFT (8), SOAK_MAX_RSS_DRIFT_KIB (16384), SOAK_LOG (where the proxy's JSON
# log goes, kept after the run; else the scratch folder), BASE_PORT (18900: the fault
# server, then the proxy, then a port where nothing listens).
set -euo pipefail
cd "$(dirname "$0")/.."

SOAK_MINUTES=${SOAK_MINUTES:-2}
BASE_PORT=${BASE_PORT:-18900}
FAULTS_PORT=$BASE_PORT
PROXY_PORT=$((BASE_PORT + 1))
DOWN_PORT=$((BASE_PORT + 2))

for tool in python3 curl; do
    command -v "$tool" >/dev/null || { echo "$tool is needed (apt-get install python3 curl)" >&2; exit 2; }
done

if [ -z "${TOKENPROXY:-}" ]; then
    if [ "${SOAK_BUILD:-release}" = debug ]; then
        swift build --product tokenproxy >&2
        TOKENPROXY="$(swift build --show-bin-path)/tokenproxy"
    else
        TOKENPROXY=$(scripts/build-release.sh .build-release | tail -1)
    fi
fi
[ -x "$TOKENPROXY" ] || { echo "no tokenproxy binary at $TOKENPROXY" >&2; exit 2; }

# shellcheck source=bench/common.sh
source bench/common.sh
bench_scratch soak
log=${SOAK_LOG:-$work/proxy.log}

python3 bench/fault_server.py "$FAULTS_PORT" --expires-in 5 2> "$work/faults.log" & pids+=($!)

# The routes: "ok" (a healthy provider and upstream), "plain" (no provider), "flap" (a
# provider whose token endpoint the soak flips between healthy and faulty), one "tok-MODE"
# per faulty token endpoint (a healthy upstream behind it), one "up-MODE" per faulty upstream
# (the healthy provider in front of it); "down" is a port where nothing listens.
faults="http://127.0.0.1:$FAULTS_PORT"
down="http://127.0.0.1:$DOWN_PORT"
provider() { # NAME TOKEN_URL
    printf '    "%s": {"grant": "client_credentials", "token_url": "%s", "client_id": "soak",' "$1" "$2"
    printf ' "client_secret": {"env": "SOAK_CLIENT_SECRET"}, "allow_insecure_endpoints": true,'
    printf ' "refresh_skew_seconds": 1}'
}
route() { # NAME UPSTREAM [PROVIDER]
    printf '    {"name": "%s", "path_prefix": "/%s", "upstream": "%s"' "$1" "$1" "$2"
    if [ -n "${3:-}" ]; then printf ', "provider": "%s", "allow_insecure_upstream": true' "$3"; fi
    printf '}'
}
providers=("$(provider healthy "$faults/token/answer")" "$(provider flapping "$faults/token")")
routes=("$(route ok "$faults/up" healthy)" "$(route plain "$faults/up/answer")"
    "$(route flap "$faults/up/answer" flapping)")
for mode in hang silence drip refuse busy html garbage reset close flap down; do
    url="$faults/token/$mode"
    [ "$mode" = down ] && url="$down/token"
    providers+=("$(provider "tok-$mode" "$url")")
    routes+=("$(route "tok-$mode" "$faults/up/answer" "tok-$mode")")
done
for mode in hang silence drip refuse garbage reset close flap down; do
    url="$faults/up/$mode"
    [ "$mode" = down ] && url="$down"
    routes+=("$(route "up-$mode" "$url" healthy)")
done
join() { local IFS=$'\n'; printf '%s' "${*/%/,}" | sed '$ s/,$//'; }
cat > "$work/tokenproxy.json" <<CONF
{
  "listen": "127.0.0.1:$PROXY_PORT",
  "token_store": "memory",
  "limits": {
    "token_wait_seconds": 2, "token_request_seconds": 3, "token_failure_backoff_seconds": 4,
    "upstream_connect_timeout_seconds": 1, "upstream_first_byte_timeout_seconds": 2,
    "upstream_idle_seconds": 2, "header_timeout_seconds": 3, "idle_timeout_seconds": 5,
    "drain_timeout_seconds": 2, "max_connections": 512
  },
  "providers": {
$(join "${providers[@]}")
  },
  "routes": [
$(join "${routes[@]}")
  ]
}
CONF

SOAK_CLIENT_SECRET=soak-secret "$TOKENPROXY" serve --config "$work/tokenproxy.json" --log-format json \
    2> "$log" & pids+=($!)
proxy_pid=$!
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$PROXY_PORT/_tokenproxy/healthz" -o /dev/null && break
    kill -0 "$proxy_pid" 2>/dev/null || break
    sleep 0.1
done
if ! curl -sf "http://127.0.0.1:$PROXY_PORT/_tokenproxy/healthz" -o /dev/null; then
    echo "tokenproxy does not answer:" >&2
    tail -20 "$log" >&2
    exit 1
fi
curl -sf "http://127.0.0.1:$PROXY_PORT/ok/answer/first" -o /dev/null ||
    { echo "the healthy route does not answer" >&2; tail -20 "$log" >&2; exit 1; }

echo "tokenproxy $TOKENPROXY (pid $proxy_pid) on 127.0.0.1:$PROXY_PORT, faults on 127.0.0.1:$FAULTS_PORT"
# soak_load.py stops by itself; the timeout is a second guard. In the background, so that a
# signal to this script stops it at once (through the cleanup) rather than after the soak.
timeout "$(awk -v m="$SOAK_MINUTES" 'BEGIN { printf "%d", m * 60 + 600 }')" python3 bench/soak_load.py \
    --proxy "$PROXY_PORT" --faults "$FAULTS_PORT" --pid "$proxy_pid" --log "$log" \
    --minutes "$SOAK_MINUTES" --warmup "${SOAK_WARMUP:-20}" --settle "${SOAK_SETTLE:-8}" \
    --clients "${SOAK_CLIENTS:-48}" --rate "${SOAK_RATE:-100}" --max-requests "${SOAK_MAX_REQUESTS:-1000000}" \
    --client-timeout "${SOAK_CLIENT_TIMEOUT:-15}" --flip-seconds "${SOAK_FLIP_SECONDS:-8}" \
    --max-fd-drift "${SOAK_MAX_FD_DRIFT:-8}" --max-rss-drift-kib "${SOAK_MAX_RSS_DRIFT_KIB:-16384}" &
pids+=($!)
status=0
wait "$!" || status=$?
exit "$status"
