#!/usr/bin/env bash
# What one forwarded request costs tokenproxy in instructions, counted by valgrind's
# callgrind rather than timed, so that a change can be judged on a noisy machine: the same
# binary gives nearly the same figures run after run. tokenproxy runs under callgrind in
# front of a local HTTPS nginx (as in bench/compare.sh), with a static provider and no access
# log; WARMUP requests (over twice as many connections) fill its pools and caches and open
# its upstream connections, the counters are zeroed, REQUESTS more go out over CLIENTS
# kept-alive connections (one 1 KiB GET at a time on each), and the counters are dumped. A
# TLS session set up with the upstream during the count still happens now and then: it adds
# 3,500 to 7,000 instructions a request in OpenSSL and libc, and a few allocations; the
# subtotal of tokenproxy's own code stays within a few hundred instructions. Prints the
# instructions per request, in all and by object (tokenproxy's binary, the Swift runtime,
# libdispatch, libcurl, libc, OpenSSL, ...), and the calls per request to malloc (every
# allocation of the process, libcurl's and OpenSSL's included; calloc and realloc beside
# it) and to swift_allocObject (the class instances, closure contexts, array and string
# storage Swift allocates). The kernel is not counted. valgrind 3.19 needs two workarounds,
# below: a copy of the binary without its debug information, and a preloaded sigsuspend.
#
#   bench/instructions.sh BINARY                      # WARMUP=1000 REQUESTS=2000 CLIENTS=4
#   REQUESTS=4000 bench/instructions.sh BINARY
#
# It builds nothing; a release build is enough, e.g.
#   swift build -c release --product tokenproxy --scratch-path .build-rel
#   bench/instructions.sh .build-rel/release/tokenproxy
# KEEP=1 keeps the callgrind file (its path is printed) for callgrind_annotate.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 TOKENPROXY_BINARY" >&2
    exit 2
fi
BINARY=$(realpath "$1")
WARMUP=${WARMUP:-1000}
REQUESTS=${REQUESTS:-2000}
CLIENTS=${CLIENTS:-4}
UPSTREAM_PORT=${UPSTREAM_PORT:-18643}
PROXY_PORT=${PROXY_PORT:-18281}

for tool in valgrind callgrind_control strip cc nginx openssl python3; do
    command -v "$tool" >/dev/null || { echo "$tool is needed (apt-get install valgrind nginx-light openssl python3)" >&2; exit 2; }
done

# shellcheck source=bench/common.sh
source bench/common.sh
bench_scratch instructions
[ "${KEEP:-0}" = 1 ] && keep=$(mktemp -d /tmp/tokenproxy-callgrind.XXXXXX)
bench_certificates
bench_upstream "$UPSTREAM_PORT" 100000000
bench_tokenproxy_config "$work/proxy.json" "$PROXY_PORT" 64 "/=$UPSTREAM_PORT"

# valgrind 3.19 rewrites the signal mask of rt_sigsuspend in place, and crashes when it lies
# in read-only memory, as libdispatch's does (its main thread waits in sigsuspend): a
# preloaded sigsuspend hands the kernel a copy on the stack instead.
cat > "$work/sigsuspend.c" <<'C'
#define _GNU_SOURCE
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
int sigsuspend(const sigset_t *mask) { sigset_t copy = *mask; return syscall(SYS_rt_sigsuspend, &copy, 8); }
C
cc -shared -fPIC -O2 -o "$work/sigsuspend.so" "$work/sigsuspend.c"
# valgrind 3.19 cannot read the DWARF 5 debug information Swift writes: a copy without it
# (the symbols stay, so functions keep their names).
strip --strip-debug -o "$work/tokenproxy" "$BINARY"
BENCH_TOKEN=bench-token LD_PRELOAD="$work/sigsuspend.so" valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" \
    "$work/tokenproxy" serve --config "$work/proxy.json" --log-level warning 2>"$work/valgrind.log" & pids+=($!)
proxy=$!
for _ in $(seq 600); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PROXY_PORT") 2>/dev/null && break
    sleep 0.1
done
kill -0 "$proxy" 2>/dev/null || { cat "$work/valgrind.log" >&2; exit 1; }

# $2 connections, each sending its share of $1 GETs of /1k one after the other.
requests() {
    python3 - "$PROXY_PORT" "$1" "$2" <<'PY'
import http.client
import sys
import threading

port, total, clients = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
failures = []

def client(count):
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        for _ in range(count):
            connection.request("GET", "/1k")
            response = connection.getresponse()
            if response.status != 200 or len(response.read()) != 1024:
                failures.append(response.status)
    except OSError as error:
        failures.append(repr(error))

threads = [threading.Thread(target=client, args=(total // clients + (i < total % clients),)) for i in range(clients)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
if failures:
    sys.exit(f"{len(failures)} requests failed: {failures[:5]}")
PY
}

# Twice as many connections while warming up, so that the upstream connections the counted
# requests need are open.
requests "$WARMUP" $((CLIENTS * 2))
callgrind_control --zero "$proxy" >/dev/null 2>&1 || { echo "callgrind_control --zero failed" >&2; exit 1; }
requests "$REQUESTS" "$CLIENTS"
callgrind_control --dump "$proxy" >/dev/null 2>&1 || { echo "callgrind_control --dump failed" >&2; exit 1; }
dumps=("$work"/callgrind.out.*)
dump=${dumps[0]}
[ -f "$dump" ] || { echo "callgrind wrote no profile" >&2; exit 1; }
[ -n "${keep:-}" ] && cp "$dump" "$keep/" && echo "callgrind file: $keep/$(basename "$dump")"

# Self cost of each function, summed by object; calls to malloc and swift_allocObject from
# anywhere. Names may be compressed as "(id) name" on first use and "(id)" afterwards.
python3 - "$dump" "$REQUESTS" <<'PY'
import collections
import os
import re
import sys

names = {"ob": {}, "fn": {}}
def name(kind, text):
    match = re.match(r"\((\d+)\)(?: (.*))?", text)
    if not match:
        return text
    if match.group(2) is not None:
        names[kind][match.group(1)] = match.group(2)
    return names[kind][match.group(1)]

by_object = collections.Counter()
calls = collections.Counter()
obj = cobj = ""
skip_next = False
call_target = None
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("ob="):
        obj = name("ob", line[3:])
    elif line.startswith("fn="):
        name("fn", line[3:])
    elif line.startswith("cob="):
        name("ob", line[4:])
    elif line.startswith("cfn="):
        call_target = name("fn", line[4:])
    elif line.startswith("calls="):
        calls[call_target] += int(line[6:].split()[0])
        skip_next = True
    elif line[:1].isdigit() or line[:1] in "+-*":
        if skip_next:
            skip_next = False
            continue
        fields = line.split()
        if len(fields) > 1:
            by_object[obj] += int(fields[1])

count = int(sys.argv[2])
total = sum(by_object.values())
print(f"{count} requests: {total / count:,.0f} instructions per request")
own = sum(cost for obj, cost in by_object.items() if re.search(r"tokenproxy$|libswift|libdispatch|libBlocksRuntime", obj))
print(f"  tokenproxy's own code, Swift runtime and libdispatch: {own / count:,.0f}")
for obj, cost in by_object.most_common():
    if cost / count >= 100:
        print(f"  {os.path.basename(obj):<28} {cost / count:>9,.0f}")
print(f"malloc calls per request: {calls['malloc'] / count:.1f} (besides: calloc {calls['calloc'] / count:.1f}, "
      f"realloc {calls['realloc'] / count:.1f})")
print(f"swift_allocObject calls per request: {calls['swift_allocObject'] / count:.1f}")
PY
