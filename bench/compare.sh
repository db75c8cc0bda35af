#!/usr/bin/env bash
# Paired comparison of two tokenproxy binaries (before and after a change) on the same
# machine at the same time: both run against one local HTTPS nginx upstream, and the
# measurements alternate between them, round after round, so that the noise of a shared
# machine falls on both alike. Prints each round and the medians with their spread.
#
#   bench/compare.sh OLD_BINARY NEW_BINARY            # 5 rounds of 8 s per measurement
#   ROUNDS=9 DURATION=10 bench/compare.sh OLD NEW
#   CONNECTIONS="1024 256" KEEPALIVE_REQUESTS=1000 bench/compare.sh OLD NEW
#
# CONNECTIONS lists the client connection counts measured ("64 1" by default);
# KEEPALIVE_REQUESTS is how many requests the upstream serves on a connection before
# closing it (a million by default, so connections are kept; nginx's default is 1,000).
# Each measurement also reads the proxy's CPU time (user and system, from /proc) and divides
# it by the requests answered: CPU time per request, whatever the rate.
# OLD_PROVIDER and NEW_PROVIDER (static or client_credentials) pick each side's provider: a
# client_credentials token comes from the upstream's /token once and is then cached, the
# path a sidecar's requests take. OLD_LOG and NEW_LOG (off, text or json) turn each side's
# access log on, written to a file; off by default, as for the peers. Give the same binary
# twice to measure what the token path or the logs cost:
#   NEW_PROVIDER=client_credentials NEW_LOG=json bench/compare.sh BINARY BINARY
# METHOD=POST sends small form POSTs to the upstream's /post instead of GETs of /1k (a
# request that is not idempotent goes out on a new upstream connection: docs/reference/upstream.md).
#
# Build a binary as the Dockerfile does, e.g. for a commit checked out in a worktree:
#   scripts/build-release.sh /tmp/b     # prints the binary's path
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
    echo "usage: $0 OLD_BINARY NEW_BINARY" >&2
    exit 2
fi
OLD=$1
NEW=$2
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-8}
read -r -a CONNECTIONS <<< "${CONNECTIONS:-64 1}"
KEEPALIVE_REQUESTS=${KEEPALIVE_REQUESTS:-1000000}
# Descriptors for the client and upstream connections of both proxies.
ulimit -n 16384 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
UPSTREAM_PORT=${UPSTREAM_PORT:-18543}
OLD_PORT=${OLD_PORT:-18181}
NEW_PORT=${NEW_PORT:-18182}

for tool in wrk openssl python3; do
    command -v "$tool" >/dev/null || { echo "$tool is needed (apt-get install wrk openssl python3)" >&2; exit 2; }
done

# shellcheck source=bench/common.sh
source bench/common.sh
bench_scratch compare
bench_certificates

bench_upstream "$UPSTREAM_PORT" "$KEEPALIVE_REQUESTS"

declare -A PID
for side in old new; do
    port=$OLD_PORT binary=$OLD provider=${OLD_PROVIDER:-static} log=${OLD_LOG:-off}
    [ "$side" = new ] && port=$NEW_PORT binary=$NEW provider=${NEW_PROVIDER:-static} log=${NEW_LOG:-off}
    BENCH_PROVIDER=$provider bench_tokenproxy_config "$work/$side.json" "$port" 4096 "/=$UPSTREAM_PORT"
    case "$log" in
        off) logging=(--log-level warning) ;;
        text) logging=(--log-level info) ;;
        json) logging=(--log-level info --log-format json) ;;
        *) echo "OLD_LOG and NEW_LOG are off, text or json" >&2; exit 2 ;;
    esac
    # Access lines go to a file, as a container runtime collects a sidecar's standard error.
    BENCH_TOKEN=bench-token "$binary" serve --config "$work/$side.json" "${logging[@]}" 2>"$work/$side.log" & pids+=($!)
    PID[$side]=$!
done
for port in "$OLD_PORT" "$NEW_PORT"; do
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.1
    done
done
for port in "$OLD_PORT" "$NEW_PORT"; do
    curl -sf "http://127.0.0.1:$port/1k" -o /dev/null || { echo "the proxy on $port does not answer" >&2; exit 1; }
done
# Resident memory after the first request and before any load, as bench/run.sh's "RSS idle".
for side in old new; do
    echo "$side: RSS idle $(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/${PID[$side]}/status") MiB"
done

METHOD=${METHOD:-GET}
target=/1k
wrk_script=()
if [ "$METHOD" = POST ]; then
    target=/post
    cat > "$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = "a=1"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
LUA
    wrk_script=(-s "$work/post.lua")
fi

results="$work/results.tsv"
: > "$results"
measure() { # side round connections threads port
    local output start end
    start=$(bench_ticks "${PID[$1]}")
    output=$(wrk --latency "${wrk_script[@]}" -t "$4" -c "$3" -d "${DURATION}s" "http://127.0.0.1:$5$target")
    end=$(bench_ticks "${PID[$1]}")
    # Failures as bench/run.sh counts them: non-2xx/3xx answers and socket errors. The proxy's
    # CPU time over the measurement, with the requests wrk saw answered, gives its CPU time
    # per request.
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" \
        "$(echo "$output" | awk '/Requests\/sec/ {print $2}')" \
        "$(echo "$output" | awk '$1 == "50%" {print $2}')" \
        "$(echo "$output" | awk '$1 == "99%" {print $2}')" \
        "$(echo "$output" | awk '/Non-2xx/ {n += $NF} /Socket errors/ {gsub(",", ""); n += $4 + $6 + $8 + $10} END {print n + 0}')" \
        $((end - start)) "$(echo "$output" | awk '/requests in/ {print $1}')" \
        >> "$results"
}
for round in $(seq "$ROUNDS"); do
    # Which side goes first alternates, so neither always meets a warmer machine.
    order=(old new)
    [ $((round % 2)) = 0 ] && order=(new old)
    for side in "${order[@]}"; do
        port=$OLD_PORT
        [ "$side" = new ] && port=$NEW_PORT
        for connections in "${CONNECTIONS[@]}"; do
            threads=2
            [ "$connections" -lt 2 ] && threads=1
            measure "$side" "$round" "$connections" "$threads" "$port"
        done
    done
done

python3 - "$results" "$DURATION" "$(getconf CLK_TCK)" <<'PY'
import statistics
import sys

def seconds(text):
    for unit, factor in (("us", 1e-6), ("ms", 1e-3), ("s", 1.0)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * factor
    return float("nan")

rows = {}
for line in open(sys.argv[1]):
    side, round_, connections, rps, p50, p99, failed, ticks, requests = line.rstrip("\n").split("\t")
    # A measurement that served nothing has no CPU time per request.
    cpu = int(ticks) / int(sys.argv[3]) * 1e6 / int(requests) if requests.isdigit() and int(requests) > 0 else None
    rows.setdefault((side, int(connections)), []).append((float(rps), seconds(p50), seconds(p99), int(failed), cpu))

def summary(values, scale, unit, decimals):
    values = [v for v in values if v is not None]
    if not values:
        return "none"
    return f"{statistics.median(values) * scale:.{decimals}f}{unit} ({min(values) * scale:.{decimals}f}-{max(values) * scale:.{decimals}f})"

counts = sorted({connections for _, connections in rows}, reverse=True)
print(f"{sys.argv[2]} s per measurement, {len(rows[('old', counts[0])])} rounds; median (min-max)")
for connections in counts:
    print(f"c={connections}")
    for side in ("old", "new"):
        runs = rows[(side, connections)]
        print(f"  {side}: req/s {summary([r[0] for r in runs], 1, '', 0)}, p50 {summary([r[1] for r in runs], 1e3, ' ms', 3)}, "
              f"p99 {summary([r[2] for r in runs], 1e3, ' ms', 3)}, CPU {summary([r[4] for r in runs], 1, '', 1)} us/request, "
              f"failed {sum(r[3] for r in runs)}")
    old, new = rows[("old", connections)], rows[("new", connections)]
    ratios = sorted(n[0] / o[0] for o, n in zip(old, new) if o[0] > 0)
    if ratios:
        print(f"  new/old req/s per round: {', '.join(f'{r:.2f}' for r in ratios)}; median {statistics.median(ratios):.2f}")
    cpu = sorted(n[4] / o[4] for o, n in zip(old, new) if o[4] and n[4] is not None)
    if cpu:
        print(f"  new/old CPU per request per round: {', '.join(f'{r:.2f}' for r in cpu)}; median {statistics.median(cpu):.2f}")
PY
