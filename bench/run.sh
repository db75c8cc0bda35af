#!/usr/bin/env bash
# Runs tokenproxy beside its peers, nginx, HAProxy and Caddy, each adding a fixed
# Authorization header in front of the same local HTTPS nginx upstream (TLS verified, logs
# off, kept-alive upstream connections), and prints medians with their spread and the ratio
# to nginx:
#   - 1 KiB at 1 and 64 connections, against an upstream that closes a connection after
#     1,000 requests (nginx's default `keepalive_requests`, so proxies reconnect as with real
#     upstreams) and against one that keeps it open;
#   - an 8 MiB download at 1 connection;
#   - scaling: requests/s and p99 at 1, 64, 256 and 1,024 connections;
#   - CPU time per request at 64 connections: the proxy's, the upstream's and the rest of the
#     machine's (wrk, the kernel), and beside them libcurl alone (bench/libcurl_floor.c, 64
#     requests at a time against the same upstream), the floor under any proxy built on it,
#     and how long the proxy's threads and the upstream's workers waited for a processor;
#   - memory: resident memory with 10,000 idle kept-alive client connections, per connection.
# The machine is assumed shared and noisy: the proxies are measured in turn, measurement by
# measurement, for ROUNDS rounds, and each figure is the median with the range of the rounds.
#
#   bench/run.sh                           # DURATION=5 s per measurement, ROUNDS=3
#   DURATION=10 ROUNDS=5 bench/run.sh      # longer
#   DURATION=2 ROUNDS=1 IDLE=2000 bench/run.sh   # a quick check of the script
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
IDLE=${IDLE:-10000}
BASE_PORT=${BASE_PORT:-18400}
UPSTREAM_CLOSING=$BASE_PORT          # closes after 1,000 requests
UPSTREAM_KEEPING=$((BASE_PORT + 1))  # keeps connections open
declare -A PORT=([nginx]=$((BASE_PORT + 10)) [haproxy]=$((BASE_PORT + 11)) [caddy]=$((BASE_PORT + 12))
    [tokenproxy]=$((BASE_PORT + 13)))
PROXIES=(nginx haproxy caddy tokenproxy)

# Tools: wrk, the proxies, openssl; libcurl's headers for the build (as scripts/test.sh).
need=()
for package in libcurl4-openssl-dev pkg-config gcc; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || need+=("$package")
done
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || need+=(haproxy)
command -v caddy >/dev/null || need+=(caddy)
command -v openssl >/dev/null || need+=(openssl)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
    sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
# Descriptors for every proxy: IDLE client connections, as many upstream connections (the
# idle measurement opens its connections 500 at a time, and a proxy may keep an upstream
# connection for each it served at once), and room for the rest. Where the hard limit is
# lower, the proxies get the hard limit, as long as it leaves IDLE + 4,000 (the connections
# a proxy opens upstream while the idle ones arrive 500 at a time, and its own reserve),
# which is also the least any IDLE gets (the 1,024-connection measurement needs as many).
DESCRIPTORS=$((2 * IDLE + 1000))
[ "$DESCRIPTORS" -ge $((IDLE + 4000)) ] || DESCRIPTORS=$((IDLE + 4000))
hard=$(ulimit -Hn)
[ "$hard" = unlimited ] || [ "$hard" -ge "$DESCRIPTORS" ] || DESCRIPTORS=$hard
[ "$DESCRIPTORS" -ge $((IDLE + 4000)) ] || { echo "the descriptor hard limit $hard is below $((IDLE + 4000)); lower IDLE" >&2; exit 2; }
ulimit -n "$DESCRIPTORS" || exit 2

# Built as the Dockerfile builds it (scripts/build-release.sh), in a scratch folder of its
# own; TOKENPROXY=/path/to/binary measures another.
if [ -z "${TOKENPROXY:-}" ]; then
    TOKENPROXY=$(scripts/build-release.sh .build-bench)
fi

# shellcheck source=bench/common.sh
source bench/common.sh
bench_scratch bench
declare -A PID=()
bench_certificates

mkdir -p "$work/www" "$work/upstream" "$work/nginx" "$work/caddy"
head -c 1024 /dev/zero | tr '\0' 'a' > "$work/www/1k"
head -c $((8 * 1024 * 1024)) /dev/urandom > "$work/www/8m"

cat > "$work/upstream/nginx.conf" <<CONF
$(bench_nginx_main "$work/upstream")
worker_processes auto;
events { worker_connections 8192; }
http {
$(bench_nginx_http "$work/upstream")
  ssl_certificate $work/server.pem;
  ssl_certificate_key $work/server.key;
  root $work/www;
  server { listen 127.0.0.1:$UPSTREAM_CLOSING ssl; keepalive_requests 1000; }
  server { listen 127.0.0.1:$UPSTREAM_KEEPING ssl; keepalive_requests 100000000; }
}
CONF

bench_nginx_proxy_config "${PORT[nginx]}" "$DESCRIPTORS" "/closing/=$UPSTREAM_CLOSING" "/keeping/=$UPSTREAM_KEEPING"

cat > "$work/haproxy.cfg" <<CONF
global
  maxconn $((IDLE + 1000))
  # HAProxy reserves two descriptors per connection (client and server side); idle client
  # connections need one, so a limit below twice maxconn is only warned about.
  no strict-limits
  nbthread $(nproc)
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  timeout http-keep-alive 60s
frontend bench
  bind 127.0.0.1:${PORT[haproxy]}
  http-request set-header Authorization "Bearer bench-token"
  use_backend closing if { path_beg /closing/ }
  default_backend keeping
backend closing
  http-request replace-path /closing(/.*) \1
  http-reuse always
  server up 127.0.0.1:$UPSTREAM_CLOSING ssl verify required ca-file $work/ca.pem sni str(localhost)
backend keeping
  http-request replace-path /keeping(/.*) \1
  http-reuse always
  server up 127.0.0.1:$UPSTREAM_KEEPING ssl verify required ca-file $work/ca.pem sni str(localhost)
CONF

cat > "$work/caddy/Caddyfile" <<CONF
{
  admin off
  auto_https off
}
http://127.0.0.1:${PORT[caddy]} {
  handle_path /closing/* {
    reverse_proxy https://127.0.0.1:$UPSTREAM_CLOSING {
      header_up Authorization "Bearer bench-token"
      transport http {
        tls_trusted_ca_certs $work/ca.pem
        tls_server_name localhost
      }
    }
  }
  handle_path /keeping/* {
    reverse_proxy https://127.0.0.1:$UPSTREAM_KEEPING {
      header_up Authorization "Bearer bench-token"
      transport http {
        tls_trusted_ca_certs $work/ca.pem
        tls_server_name localhost
      }
    }
  }
}
CONF

bench_tokenproxy_config "$work/proxy.json" "${PORT[tokenproxy]}" $((IDLE + 1000)) \
    "/closing=$UPSTREAM_CLOSING" "/keeping=$UPSTREAM_KEEPING"

"$NGINX" -p "$work/upstream" -c "$work/upstream/nginx.conf" -g 'daemon off;' & pids+=($!)
UPSTREAM_PID=$!
"$NGINX" -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off;' & pids+=($!)
PID[nginx]=$!
"$HAPROXY" -f "$work/haproxy.cfg" -db >/dev/null 2>&1 & pids+=($!)
PID[haproxy]=$!
HOME=$work/caddy XDG_DATA_HOME=$work/caddy XDG_CONFIG_HOME=$work/caddy \
    caddy run --config "$work/caddy/Caddyfile" --adapter caddyfile >/dev/null 2>&1 & pids+=($!)
PID[caddy]=$!
BENCH_TOKEN=bench-token "$TOKENPROXY" serve --config "$work/proxy.json" --log-level warning & pids+=($!)
PID[tokenproxy]=$!

for port in "$UPSTREAM_CLOSING" "$UPSTREAM_KEEPING" "${PORT[@]}"; do
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.1
    done
done
for proxy in "${PROXIES[@]}"; do
    for path in closing keeping; do
        body=$(curl -sf "http://127.0.0.1:${PORT[$proxy]}/$path/1k") || { echo "$proxy does not answer /$path/1k" >&2; exit 1; }
        [ "${#body}" = 1024 ] || { echo "$proxy answered /$path/1k with ${#body} bytes" >&2; exit 1; }
    done
done

# The resident memory of a proxy's processes, in KiB (nginx: its master and workers).
rss() {
    local pid=$1 total=0 child
    total=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
    for child in $(pgrep -P "$pid" || true); do
        total=$((total + $(awk '/VmRSS/ {print $2}' "/proc/$child/status")))
    done
    echo "$total"
}
tokenproxy_idle_rss=$(rss "${PID[tokenproxy]}")

# The time the threads of a process and its children spent runnable but waiting for a
# processor, in nanoseconds (the second field of each thread's schedstat); a thread that
# exits during a measurement takes its share with it.
waits() {
    local pid
    for pid in "$1" $(pgrep -P "$1" || true); do
        cat /proc/"$pid"/task/*/schedstat 2>/dev/null || true
    done | awk '{total += $2} END {printf "%.0f\n", total}'
}
# The machine's CPU time spent other than idle or stolen by the host, in clock ticks.
busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }

read -r -a curl_libs <<< "$(curl-config --libs)"
gcc -O2 -o "$work/libcurl_floor" bench/libcurl_floor.c "${curl_libs[@]}"

results="$work/results.tsv"
cpu="$work/cpu.tsv"
: > "$results"
: > "$cpu"
measure() { # proxy test connections url
    local threads=2 output counted=0 start=() end=()
    [ "$3" = 1 ] && threads=1
    # At 64 connections to the closing upstream, where each process's CPU time goes, and
    # how long its threads waited for a processor.
    if [ "$2 $3" = "closing 1k 64" ] && [ -n "${PID[$1]:-}" ]; then
        counted=1
        start=("$(bench_ticks "${PID[$1]}")" "$(bench_ticks "$UPSTREAM_PID")" "$(busy)" \
            "$(waits "${PID[$1]}")" "$(waits "$UPSTREAM_PID")")
    fi
    output=$(wrk --latency -t "$threads" -c "$3" -d "${DURATION}s" "$4" 2>&1)
    if [ "$counted" = 1 ]; then
        end=("$(bench_ticks "${PID[$1]}")" "$(bench_ticks "$UPSTREAM_PID")" "$(busy)" \
            "$(waits "${PID[$1]}")" "$(waits "$UPSTREAM_PID")")
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$(echo "$output" | awk '/requests in/ {print $1}')" \
            $((end[0] - start[0])) $((end[1] - start[1])) $((end[2] - start[2])) \
            $((end[3] - start[3])) $((end[4] - start[4])) >> "$cpu"
    fi
    # Failures: answers other than 2xx/3xx, and wrk's socket errors (connect, read, write,
    # timeout), so that a proxy answering quick 502s does not look fast.
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" \
        "$(echo "$output" | awk '/Requests\/sec/ {print $2}')" \
        "$(echo "$output" | awk '$1 == "50%" {print $2}')" \
        "$(echo "$output" | awk '$1 == "99%" {print $2}')" \
        "$(echo "$output" | awk '/Transfer\/sec/ {print $2}')" \
        "$(echo "$output" | awk '/Non-2xx/ {n += $NF} /Socket errors/ {gsub(",", ""); n += $4 + $6 + $8 + $10} END {print n + 0}')" \
        >> "$results"
}
# libcurl alone, driven as the engine drives it, 64 requests at a time against the closing
# upstream: its own CPU time per request (from getrusage), the upstream's and the rest.
measure_libcurl() {
    local start end output requests=$((DURATION * 8000))
    start=("$(bench_ticks "$UPSTREAM_PID")" "$(busy)" "$(waits "$UPSTREAM_PID")")
    output=$("$work/libcurl_floor" "https://127.0.0.1:$UPSTREAM_CLOSING/1k" "$work/ca.pem" "$requests" 64)
    end=("$(bench_ticks "$UPSTREAM_PID")" "$(busy)" "$(waits "$UPSTREAM_PID")")
    printf '%s\t%s\t%s\t%s\t%s\t\t%s\n' "libcurl alone" "$requests" \
        "$(echo "$output" | sed -n 's/.*CPU \([0-9.]*\) us.*/\1/p')" \
        $((end[0] - start[0])) $((end[1] - start[1])) $((end[2] - start[2])) >> "$cpu"
}
tests=("closing 1k 1" "closing 1k 64" "keeping 1k 64" "closing 1k 256" "closing 1k 1024" "keeping 8m 1")
for round in $(seq "$ROUNDS"); do
    echo "round $round of $ROUNDS" >&2
    measure direct "closing 1k" 1 "https://127.0.0.1:$UPSTREAM_CLOSING/1k"
    for test in "${tests[@]}"; do
        read -r path file connections <<< "$test"
        # Each measurement goes round the proxies, starting with a different one each round.
        for index in "${!PROXIES[@]}"; do
            proxy=${PROXIES[$(((index + round) % ${#PROXIES[@]}))]}
            measure "$proxy" "$path $file" "$connections" "http://127.0.0.1:${PORT[$proxy]}/$path/$file"
        done
        if [ "$path $file $connections" = "closing 1k 64" ]; then measure_libcurl; fi
    done
done

# Idle connections: each proxy in turn holds IDLE kept-alive client connections.
memory="$work/memory.tsv"
: > "$memory"
for proxy in "${PROXIES[@]}"; do
    before=$(rss "${PID[$proxy]}")
    coproc IDLER { python3 bench/idle_connections.py 127.0.0.1 "${PORT[$proxy]}" /keeping/1k "$IDLE"; }
    read -r _ opened <&"${IDLER[0]}"
    sleep 1
    after=$(rss "${PID[$proxy]}")
    printf '%s\t%s\t%s\t%s\n' "$proxy" "$before" "$after" "$opened" >> "$memory"
    echo >&"${IDLER[1]}"
    wait "$IDLER_PID" 2>/dev/null || true
    sleep 2
done

python3 - "$results" "$memory" "$tokenproxy_idle_rss" "$DURATION" "$ROUNDS" "$cpu" "$(getconf CLK_TCK)" <<'PY'
import statistics
import sys

results, memory, idle_rss, duration, rounds, cpu, tick = sys.argv[1:8]

def seconds(text):
    for unit, factor in (("us", 1e-6), ("ms", 1e-3), ("s", 1.0)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * factor
    return float("nan")

def megabytes(text):
    for unit, factor in (("KB", 1 / 1024), ("MB", 1.0), ("GB", 1024.0)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * factor
    return float("nan")

rows = {}
for line in open(results):
    proxy, test, connections, rps, p50, p99, transfer, failures = line.rstrip("\n").split("\t")
    rows.setdefault((proxy, test, int(connections)), []).append(
        (float(rps or "nan"), seconds(p50), seconds(p99), megabytes(transfer), int(failures or 0))
    )

def median(proxy, test, connections, field):
    values = [r[field] for r in rows.get((proxy, test, connections), [])]
    return statistics.median(values) if values else float("nan"), values

def cell(proxy, test, connections, field, scale=1.0, digits=0):
    value, values = median(proxy, test, connections, field)
    if not values:
        return "-"
    low, high = min(values) * scale, max(values) * scale
    return f"{value * scale:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"

proxies = ["nginx", "haproxy", "caddy", "tokenproxy"]
print(f"{duration} s per measurement, {rounds} rounds, proxies interleaved; median (min-max)")
print()
print("| 64 connections, 1 KiB | req/s, upstream closes after 1,000 | req/s, upstream keeps | p50 ms | p99 ms | req/s / nginx |")
print("|---|---|---|---|---|---|")
nginx64 = median("nginx", "closing 1k", 64, 0)[0]
for proxy in proxies:
    ratio = median(proxy, "closing 1k", 64, 0)[0] / nginx64
    print(f"| {proxy} | {cell(proxy, 'closing 1k', 64, 0)} | {cell(proxy, 'keeping 1k', 64, 0)} "
          f"| {cell(proxy, 'closing 1k', 64, 1, 1e3, 2)} | {cell(proxy, 'closing 1k', 64, 2, 1e3, 2)} | {ratio:.2f} |")
print()
direct = median("direct", "closing 1k", 1, 1)[0]
print("| 1 connection | p50 ms | added to a direct request, ms | p99 ms | 8 MiB download MB/s | download / nginx |")
print("|---|---|---|---|---|---|")
nginx8 = median("nginx", "keeping 8m", 1, 3)[0]
for proxy in proxies:
    p50 = median(proxy, "closing 1k", 1, 1)[0]
    print(f"| {proxy} | {cell(proxy, 'closing 1k', 1, 1, 1e3, 3)} | {(p50 - direct) * 1e3:.3f} "
          f"| {cell(proxy, 'closing 1k', 1, 2, 1e3, 2)} | {cell(proxy, 'keeping 8m', 1, 3, 1, 0)} "
          f"| {median(proxy, 'keeping 8m', 1, 3)[0] / nginx8:.2f} |")
print(f"(direct to the upstream: p50 {direct * 1e3:.3f} ms)")
print()
print("| scaling, 1 KiB, upstream closes after 1,000 | " + " | ".join(f"c={c} req/s, p99 ms" for c in (1, 64, 256, 1024)) + " |")
print("|---|" + "---|" * 4)
for proxy in proxies:
    cells = []
    for connections in (1, 64, 256, 1024):
        rps = median(proxy, "closing 1k", connections, 0)[0]
        p99 = median(proxy, "closing 1k", connections, 2)[0]
        cells.append(f"{rps:.0f}, {p99 * 1e3:.1f}")
    print(f"| {proxy} | " + " | ".join(cells) + " |")
print()
# CPU per request in microseconds: the proxy's (libcurl alone: its own, in microseconds
# already), the upstream's, and the rest of the machine's busy time (wrk, the kernel).
usage = {}
# Time waiting for a processor per request, in microseconds: the proxy's threads (none
# measured for libcurl alone) and the upstream's workers.
waiting = {}
for line in open(cpu):
    name, requests, own, upstream, machine, own_wait, upstream_wait = line.rstrip("\n").split("\t")
    requests, upstream, machine = int(requests or 0), int(upstream), int(machine)
    if requests <= 0:
        continue
    per_tick = 1e6 / int(tick) / requests
    own = float(own) if name == "libcurl alone" else int(own) * per_tick
    rest = machine * per_tick - own - upstream * per_tick
    usage.setdefault(name, []).append((own, upstream * per_tick, rest))
    waiting.setdefault(name, []).append(
        (int(own_wait) / 1000 / requests if own_wait else None, int(upstream_wait) / 1000 / requests))
def spread(column):
    return f"{statistics.median(column):.0f} ({min(column):.0f}-{max(column):.0f})"

print("| 64 connections, upstream closes after 1,000: CPU per request, us | the proxy | the upstream | the rest of the machine | all |")
print("|---|---|---|---|---|")
for name in proxies + ["libcurl alone"]:
    values = usage.get(name, [])
    if not values:
        continue
    cells = [spread([v[field] for v in values]) for field in range(3)]
    cells.append(f"{statistics.median(sum(v) for v in values):.0f}")
    print(f"| {name} | " + " | ".join(cells) + " |")
print("(libcurl alone: bench/libcurl_floor.c, 64 requests at a time, no clients to serve)")
print()
print("| 64 connections, upstream closes after 1,000: waiting for a processor per request, us | the proxy's threads | the upstream's workers |")
print("|---|---|---|")
for name in proxies + ["libcurl alone"]:
    values = waiting.get(name, [])
    if not values:
        continue
    columns = ([v[field] for v in values if v[field] is not None] for field in range(2))
    cells = [spread(column) if column else "-" for column in columns]
    print(f"| {name} | " + " | ".join(cells) + " |")
print("(time runnable but not running, from each thread's /proc schedstat)")
print()
print("| idle kept-alive client connections | opened | RSS before MiB | RSS with them MiB | bytes per connection |")
print("|---|---|---|---|---|")
for line in open(memory):
    proxy, before, after, opened = line.rstrip("\n").split("\t")
    per = (int(after) - int(before)) * 1024 / max(int(opened), 1)
    print(f"| {proxy} | {opened} | {int(before) / 1024:.1f} | {int(after) / 1024:.1f} | {per:.0f} |")
print()
print(f"tokenproxy RSS idle before the load: {int(idle_rss) / 1024:.1f} MiB")
print()
print("failed requests (answers other than 2xx/3xx, socket errors), all rounds:")
for proxy in proxies:
    failed = {f"{test} c={connections}": sum(r[4] for r in runs)
              for (name, test, connections), runs in sorted(rows.items()) if name == proxy}
    listed = ", ".join(f"{key}: {value}" for key, value in failed.items() if value) or "none"
    print(f"  {proxy}: {listed}")
PY
