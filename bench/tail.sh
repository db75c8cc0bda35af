#!/usr/bin/env bash
# Where the slowest requests wait: runs wrk at 64 connections through tokenproxy and through
# nginx (configured as in bench/run.sh) in front of the same local HTTPS nginx upstream,
# which keeps its connections open (so that a traced descriptor stays one connection for
# the whole trace), and for each proxy in turn:
#   - an untraced run: wrk's p50 and p99;
#   - a traced run: the system calls of wrk, the proxy and the upstream, recorded with
#     `perf` for TRACE seconds in the middle of it and followed request by request by
#     bench/tail.py: each leg of a request (client to proxy, inside the proxy, proxy to
#     client; proxy to upstream, inside the upstream, upstream to proxy) with its
#     percentiles, and how the slowest 1 % split their time.
# Tracing slows every process a little; its p99 is printed beside the untraced one.
#
#   bench/tail.sh                                  # DURATION=8, TRACE=2, ROUNDS=2
#   CONNECTIONS=1 bench/tail.sh                    # where one connection's time goes
#   TOKENPROXY=path/to/tokenproxy bench/tail.sh    # a build of your own
#
# Needs perf (Debian: linux-perf) and the right to trace system calls (root, or
# kernel.perf_event_paranoid at -1).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-8}
TRACE=${TRACE:-2}
ROUNDS=${ROUNDS:-2}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=2
[ "$CONNECTIONS" -lt 2 ] && THREADS=1
BASE_PORT=${BASE_PORT:-18700}
UPSTREAM_PORT=$BASE_PORT
declare -A PORT=([nginx]=$((BASE_PORT + 1)) [tokenproxy]=$((BASE_PORT + 2)))
PROXIES=(tokenproxy nginx)

for tool in wrk perf openssl python3; do
    command -v "$tool" >/dev/null || { echo "$tool is needed (apt-get install wrk linux-perf openssl python3)" >&2; exit 2; }
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "nginx is needed (apt-get install nginx-light)" >&2; exit 2; }
ulimit -n 16384 2>/dev/null || ulimit -n "$(ulimit -Hn)"

if [ -z "${TOKENPROXY:-}" ]; then
    TOKENPROXY=$(scripts/build-release.sh .build-release | tail -1)
fi

# shellcheck source=bench/common.sh
source bench/common.sh
bench_scratch tail
bench_certificates
bench_upstream "$UPSTREAM_PORT" 100000000
UPSTREAM_PID=$(pgrep -f "nginx: master process $NGINX -p $work/upstream" | head -1)

bench_nginx_proxy_config "${PORT[nginx]}" 4096 "/=$UPSTREAM_PORT"
declare -A PID
"$NGINX" -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off;' & pids+=($!)
PID[nginx]=$!
bench_tokenproxy_config "$work/tokenproxy.json" "${PORT[tokenproxy]}" 4096 "/=$UPSTREAM_PORT"
BENCH_TOKEN=bench-token "$TOKENPROXY" serve --config "$work/tokenproxy.json" --log-level warning & pids+=($!)
PID[tokenproxy]=$!
for proxy in "${PROXIES[@]}"; do
    for _ in $(seq 100); do
        curl -sf "http://127.0.0.1:${PORT[$proxy]}/1k" -o /dev/null && break
        sleep 0.1
    done
    curl -sf "http://127.0.0.1:${PORT[$proxy]}/1k" -o /dev/null || { echo "$proxy does not answer" >&2; exit 1; }
done

latency() { # wrk output -> "p50 X p99 Y, N req/s"
    awk '$1 == "50%" {p50 = $2} $1 == "99%" {p99 = $2} /Requests\/sec/ {rps = $2} END {printf "p50 %s, p99 %s, %d req/s\n", p50, p99, rps}'
}

for round in $(seq "$ROUNDS"); do
    for proxy in "${PROXIES[@]}"; do
        url="http://127.0.0.1:${PORT[$proxy]}/1k"
        echo "== $proxy, round $round of $ROUNDS"
        echo "untraced: $(wrk --latency -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" "$url" | latency)"
        wrk --latency -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" "$url" > "$work/wrk.out" &
        wrk_pid=$!
        sleep $(((DURATION - TRACE) / 2))
        proxy_pids="${PID[$proxy]} $( (pgrep -P "${PID[$proxy]}" || true) | tr "\n" " ")"
        upstream_pids=$(pgrep -P "$UPSTREAM_PID" | tr '\n' ' ')
        python3 bench/tail.py map "${PORT[$proxy]}" "$UPSTREAM_PORT" "$wrk_pid" "$proxy_pids" "$upstream_pids" \
            > "$work/descriptors"
        traced=$(echo "$wrk_pid $proxy_pids $upstream_pids" | tr -s ' ' ',' | sed 's/^,//; s/,$//')
        perf record -q -m 1024 -o "$work/perf.data" -p "$traced" \
            -e syscalls:sys_enter_read,syscalls:sys_exit_read,syscalls:sys_enter_recvfrom,syscalls:sys_exit_recvfrom \
            -e syscalls:sys_enter_write,syscalls:sys_enter_sendto,syscalls:sys_enter_writev,syscalls:sys_enter_sendmsg \
            -- sleep "$TRACE" 2>/dev/null
        wait "$wrk_pid"
        echo "traced:   $(latency < "$work/wrk.out")"
        perf script -F comm,pid,tid,cpu,time,event,trace -i "$work/perf.data" 2>/dev/null |
            python3 bench/tail.py "$work/descriptors"
    done
done
