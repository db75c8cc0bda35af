#!/usr/bin/env bash
# What libcurl alone costs per request, used as tokenproxy's engine uses it (one multi
# handle, reused easy handles, a verified kept-alive TLS connection to a local nginx, one
# added header): the floor under what any libcurl-based proxy adds to a request, whatever
# serves its clients. Runs bench/libcurl_floor.c at 1 and 64 concurrent requests, ROUNDS
# times each.
#
#   bench/libcurl-floor.sh                 # ROUNDS=3, REQUESTS=20000 (c=1) and 200000 (c=64)
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-20000}
UPSTREAM_PORT=${UPSTREAM_PORT:-18643}
for tool in gcc openssl curl-config; do
    command -v "$tool" >/dev/null || {
        echo "$tool is needed (apt-get install gcc openssl libcurl4-openssl-dev)" >&2
        exit 2
    }
done

# shellcheck source=bench/common.sh
source bench/common.sh
bench_scratch floor
bench_certificates

read -r -a curl_libs <<< "$(curl-config --libs)"
gcc -O2 -o "$work/libcurl_floor" bench/libcurl_floor.c "${curl_libs[@]}"
bench_upstream "$UPSTREAM_PORT" 100000000

url="https://127.0.0.1:$UPSTREAM_PORT/1k"
for round in $(seq "$ROUNDS"); do
    echo "round $round"
    "$work/libcurl_floor" "$url" "$work/ca.pem" "$REQUESTS" 1
    "$work/libcurl_floor" "$url" "$work/ca.pem" $((REQUESTS * 10)) 64
done
