#!/usr/bin/env bash
# Runs tokenproxy and nginx side by side in one run against the same HTTPS upstream (nginx)
# and prints a table: requests/s and latency at 1 and 64 connections, an 8 MiB download,
# and tokenproxy's memory, with the tokenproxy/nginx ratios. tokenproxy runs three times, once
# per upstream engine design (`poll`, the default, `epoll` and `dispatch`), so all are measured,
# and once more as `poll` with every answer sent through the connection's queue instead of
# written in place (TOKENPROXY_ANSWERS_IN_PLACE=0).
#
#   bench/run.sh                 # 10 s per measurement
#   DURATION=30 bench/run.sh     # longer runs
#   UPSTREAM_HTTP2=1 bench/run.sh  # let the upstream offer HTTP/2 (tokenproxy negotiates it by ALPN)
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10}
UPSTREAM_PORT=${UPSTREAM_PORT:-18443}
NGINX_PROXY_PORT=${NGINX_PROXY_PORT:-18080}
TOKENPROXY_PORT=${TOKENPROXY_PORT:-18081}
TOKENPROXY_DISPATCH_PORT=${TOKENPROXY_DISPATCH_PORT:-18082}
TOKENPROXY_EPOLL_PORT=${TOKENPROXY_EPOLL_PORT:-18083}
TOKENPROXY_QUEUE_PORT=${TOKENPROXY_QUEUE_PORT:-18084}

need=()
# The build needs libcurl's headers (as in .ci/run); the measurements need wrk, nginx, openssl.
for package in libcurl4-openssl-dev pkg-config; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || need+=("$package")
done
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v openssl >/dev/null || need+=(openssl)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

# Built as the Dockerfile builds it (static Swift runtime, linked by lld with packed relative
# relocations), in a scratch folder of its own.
build=(swift build -c release --static-swift-stdlib --product tokenproxy --scratch-path .build-bench
    -Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld -Xlinker -z -Xlinker pack-relative-relocs)
"${build[@]}" >/dev/null
TOKENPROXY="$("${build[@]}" --show-bin-path)/tokenproxy"

work=$(mktemp -d /tmp/tokenproxy-bench.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# Certificates: a CA and a server certificate for 127.0.0.1.
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 "${ec[@]}" -keyout "$work/ca.key" -out "$work/ca.pem" -days 2 -subj "/CN=bench CA" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
openssl req "${ec[@]}" -keyout "$work/server.key" -out "$work/server.csr" -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > "$work/server.ext"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial \
    -out "$work/server.pem" -days 2 -extfile "$work/server.ext" 2>/dev/null

mkdir -p "$work/www" "$work/upstream" "$work/proxy"
head -c 1024 /dev/zero | tr '\0' 'a' > "$work/www/1k"
head -c $((8 * 1024 * 1024)) /dev/urandom > "$work/www/8m"
user=""
[ "$(id -u)" = 0 ] && user="user root;"
http2=""
[ "${UPSTREAM_HTTP2:-0}" = 1 ] && http2=" http2"

common="$user
worker_processes auto;
events { worker_connections 4096; }"
temps() {
    echo "client_body_temp_path $1/tmp-body; proxy_temp_path $1/tmp-proxy; fastcgi_temp_path $1/tmp-fcgi;
          uwsgi_temp_path $1/tmp-uwsgi; scgi_temp_path $1/tmp-scgi;"
}

cat > "$work/upstream/nginx.conf" <<CONF
$common
pid $work/upstream/nginx.pid;
error_log $work/upstream/error.log warn;
http {
  access_log off;
  $(temps "$work/upstream")
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$UPSTREAM_PORT ssl$http2;
    ssl_certificate $work/server.pem;
    ssl_certificate_key $work/server.key;
    root $work/www;
  }
}
CONF

cat > "$work/proxy/nginx.conf" <<CONF
$common
pid $work/proxy/nginx.pid;
error_log $work/proxy/error.log warn;
http {
  access_log off;
  $(temps "$work/proxy")
  keepalive_requests 1000000;
  upstream backend {
    server 127.0.0.1:$UPSTREAM_PORT;
    keepalive 64;
  }
  server {
    listen 127.0.0.1:$NGINX_PROXY_PORT;
    location / {
      proxy_pass https://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Authorization "Bearer bench-token";
      proxy_ssl_verify on;
      proxy_ssl_trusted_certificate $work/ca.pem;
      proxy_ssl_name localhost;
      proxy_ssl_session_reuse on;
      proxy_buffering off;
    }
  }
}
CONF

cat > "$work/proxy.json" <<CONF
{
  "listen": "127.0.0.1:TOKENPROXY_LISTEN_PORT",
  "token_store": "memory",
  "limits": {"max_connections": 4096},
  "providers": {"bench": {"grant": "static", "token": {"env": "BENCH_TOKEN"}}},
  "routes": [{"path_prefix": "/", "upstream": "https://127.0.0.1:$UPSTREAM_PORT", "provider": "bench", "ca_file": "$work/ca.pem"}]
}
CONF

"$NGINX" -p "$work/upstream" -c "$work/upstream/nginx.conf" -g 'daemon off;' & pids+=($!)
"$NGINX" -p "$work/proxy" -c "$work/proxy/nginx.conf" -g 'daemon off;' & pids+=($!)
sed "s/TOKENPROXY_LISTEN_PORT/$TOKENPROXY_PORT/" "$work/proxy.json" > "$work/proxy-poll.json"
sed "s/TOKENPROXY_LISTEN_PORT/$TOKENPROXY_DISPATCH_PORT/" "$work/proxy.json" > "$work/proxy-dispatch.json"
sed "s/TOKENPROXY_LISTEN_PORT/$TOKENPROXY_EPOLL_PORT/" "$work/proxy.json" > "$work/proxy-epoll.json"
sed "s/TOKENPROXY_LISTEN_PORT/$TOKENPROXY_QUEUE_PORT/" "$work/proxy.json" > "$work/proxy-queue.json"
BENCH_TOKEN=bench-token TOKENPROXY_CURL_ENGINE=poll "$TOKENPROXY" serve --config "$work/proxy-poll.json" \
    --log-level warning & pids+=($!)
tokenproxy_pid=$!
BENCH_TOKEN=bench-token TOKENPROXY_CURL_ENGINE=dispatch "$TOKENPROXY" serve --config "$work/proxy-dispatch.json" \
    --log-level warning & pids+=($!)
BENCH_TOKEN=bench-token TOKENPROXY_CURL_ENGINE=epoll "$TOKENPROXY" serve --config "$work/proxy-epoll.json" \
    --log-level warning & pids+=($!)
BENCH_TOKEN=bench-token TOKENPROXY_CURL_ENGINE=poll TOKENPROXY_ANSWERS_IN_PLACE=0 "$TOKENPROXY" serve \
    --config "$work/proxy-queue.json" --log-level warning & pids+=($!)

for port in "$UPSTREAM_PORT" "$NGINX_PROXY_PORT" "$TOKENPROXY_PORT" "$TOKENPROXY_DISPATCH_PORT" "$TOKENPROXY_EPOLL_PORT" \
    "$TOKENPROXY_QUEUE_PORT"; do
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.1
    done
done
curl -sf "http://127.0.0.1:$TOKENPROXY_PORT/1k" -o /dev/null || { echo "tokenproxy does not answer"; exit 1; }
curl -sf "http://127.0.0.1:$NGINX_PROXY_PORT/1k" -o /dev/null || { echo "nginx proxy does not answer"; exit 1; }

rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
rss_idle=$(rss "$tokenproxy_pid")

results="$work/results.tsv"
: > "$results"
measure() { # name url connections threads
    local output
    output=$(wrk --latency -t "$4" -c "$3" -d "${DURATION}s" "$2")
    local rps p50 p99 transfer
    rps=$(echo "$output" | awk '/Requests\/sec/ {print $2}')
    p50=$(echo "$output" | awk '$1 == "50%" {print $2}')
    p99=$(echo "$output" | awk '$1 == "99%" {print $2}')
    transfer=$(echo "$output" | awk '/Transfer\/sec/ {print $2}')
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$3" "$rps" "$p50" "$p99" "$transfer" >> "$results"
}

for target in direct nginx tokenproxy tp-queue tp-epoll tp-dispatch; do
    case $target in
        direct) base="https://127.0.0.1:$UPSTREAM_PORT" ;;
        nginx) base="http://127.0.0.1:$NGINX_PROXY_PORT" ;;
        tokenproxy) base="http://127.0.0.1:$TOKENPROXY_PORT" ;;
        tp-queue) base="http://127.0.0.1:$TOKENPROXY_QUEUE_PORT" ;;
        tp-epoll) base="http://127.0.0.1:$TOKENPROXY_EPOLL_PORT" ;;
        tp-dispatch) base="http://127.0.0.1:$TOKENPROXY_DISPATCH_PORT" ;;
    esac
    measure "$target 1k" "$base/1k" 1 1
    measure "$target 1k" "$base/1k" 64 2
    measure "$target 8m" "$base/8m" 1 1
done
rss_loaded=$(rss "$tokenproxy_pid")

python3 - "$results" "$rss_idle" "$rss_loaded" "$DURATION" <<'PY'
import sys

def seconds(text):
    units = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
    for unit in ("us", "ms", "s"):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * units[unit]
    return float("nan")

def megabytes(text):
    units = {"KB": 1 / 1024, "MB": 1.0, "GB": 1024.0}
    for unit, factor in units.items():
        if text.endswith(unit):
            return float(text[: -len(unit)]) * factor
    return float(text.rstrip("B")) / 1048576

rows = {}
for line in open(sys.argv[1]):
    name, connections, rps, p50, p99, transfer = line.rstrip("\n").split("\t")
    rows[(name, int(connections))] = (float(rps), seconds(p50), seconds(p99), megabytes(transfer))

print(f"duration per measurement: {sys.argv[4]} s; tokenproxy RSS idle {int(sys.argv[2]) / 1024:.1f} MiB, "
      f"after load {int(sys.argv[3]) / 1024:.1f} MiB")
print()
print("tokenproxy = the default engine (poll); tp-queue = poll with answers through the connection's queue; "
      "tp-epoll = the epoll engine; tp-dispatch = the DispatchSource engine")
print(f"{'target':<12}{'test':<14}{'req/s':>12}{'p50':>12}{'p99':>12}{'MB/s':>10}")
for target in ("direct", "nginx", "tokenproxy", "tp-queue", "tp-epoll", "tp-dispatch"):
    for test, key in (("1k c=1", (f"{target} 1k", 1)), ("1k c=64", (f"{target} 1k", 64)), ("8MiB c=1", (f"{target} 8m", 1))):
        rps, p50, p99, mbs = rows[key]
        print(f"{target:<12}{test:<14}{rps:>12.0f}{p50 * 1e3:>10.3f}ms{p99 * 1e3:>10.3f}ms{mbs:>10.1f}")
print()
t, n, d = (rows[("tokenproxy 1k", 64)], rows[("nginx 1k", 64)], rows[("direct 1k", 64)])
print(f"ratio tokenproxy/nginx, 1k c=64 requests/s: {t[0] / n[0]:.2f}  (target >= 1.00)")
t1, n1, d1 = rows[("tokenproxy 1k", 1)], rows[("nginx 1k", 1)], rows[("direct 1k", 1)]
print(f"added p50 at c=1: tokenproxy {(t1[1] - d1[1]) * 1e3:.3f} ms, nginx {(n1[1] - d1[1]) * 1e3:.3f} ms  (target: tokenproxy <= nginx)")
t8, n8 = rows[("tokenproxy 8m", 1)], rows[("nginx 8m", 1)]
print(f"ratio tokenproxy/nginx, 8 MiB download MB/s: {t8[3] / n8[3]:.2f}  (target >= 0.90)")
print(f"tokenproxy RSS idle: {int(sys.argv[2]) / 1024:.2f} MiB ({sys.argv[2]} KiB; target < 30 MiB)")
dp, ep, ep1 = rows[("tp-dispatch 1k", 64)], rows[("tp-epoll 1k", 64)], rows[("tp-epoll 1k", 1)]
print(f"engines, 1k c=64 requests/s: poll {t[0]:.0f}, epoll {ep[0]:.0f}, dispatch {dp[0]:.0f}; "
      f"added p50 at c=1: poll {(t1[1] - d1[1]) * 1e3:.3f} ms, epoll {(ep1[1] - d1[1]) * 1e3:.3f} ms")
qu, qu1 = rows[("tp-queue 1k", 64)], rows[("tp-queue 1k", 1)]
print(f"answers in place (poll), 1k c=64 requests/s: {t[0]:.0f} against {qu[0]:.0f} through the queue; "
      f"added p50 at c=1: {(t1[1] - d1[1]) * 1e3:.3f} ms against {(qu1[1] - d1[1]) * 1e3:.3f} ms")
PY
