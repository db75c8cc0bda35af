#!/usr/bin/env bash
# Writes scripts/startup.order: the functions of the release binary that `tokenproxy serve`
# runs from its start through its first requests, one linker symbol name per line, for
# scripts/build-release.sh to place together (lld's --symbol-ordering-file).
#
# Builds the binary without the ordering (in .build-order, or $SCRATCH), runs `serve` under valgrind's
# callgrind with a route over verified TLS to a local nginx (the bench's upstream) and the
# default admin path, sends it the requests an idle proxy in service sees first (two proxied
# requests, /healthz, /readyz, /metrics), stops it with SIGTERM and takes the names of the
# functions callgrind saw run inside the binary. Run it again after larger changes to the
# start-up or the request path: names the code no longer has are only skipped by the build,
# new functions are not placed until the file is made again.
#
# Needs valgrind, nginx, openssl, curl and python3; takes about six minutes.
#
#   bash scripts/startup-order.sh
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in valgrind objcopy openssl curl python3; do
    command -v "$tool" >/dev/null || { echo "startup-order.sh: $tool is missing (apt-get install valgrind binutils openssl curl)" >&2; exit 2; }
done

binary=$(STARTUP_ORDER=none scripts/build-release.sh "${SCRATCH:-.build-order}")

# shellcheck source=bench/common.sh
source bench/common.sh
bench_scratch startup-order
bench_certificates
UPSTREAM_PORT=${UPSTREAM_PORT:-18653}
PROXY_PORT=${PROXY_PORT:-18654}
bench_upstream "$UPSTREAM_PORT" 1000

cat > "$work/proxy.json" <<CONF
{
  "listen": "127.0.0.1:$PROXY_PORT",
  "token_store": "memory",
  "providers": {"order": {"grant": "static", "token": {"env": "ORDER_TOKEN"}}},
  "routes": [{"path_prefix": "/", "upstream": "https://127.0.0.1:$UPSTREAM_PORT", "provider": "order", "ca_file": "$work/ca.pem"}]
}
CONF

# valgrind 3.19 cannot read the DWARF that the toolchain's lld writes; the symbol table is
# all it needs here.
objcopy --strip-debug "$binary" "$work/tokenproxy"
ORDER_TOKEN=order-token valgrind --tool=callgrind --demangle=no --dump-instr=no \
    --callgrind-out-file="$work/callgrind.out" \
    "$work/tokenproxy" serve --config "$work/proxy.json" --log-level warning 2>"$work/valgrind.log" &
proxy=$!
pids+=("$proxy")
for _ in $(seq 600); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PROXY_PORT") 2>/dev/null && break
    sleep 0.1
done
for path in 1k 1k _tokenproxy/healthz _tokenproxy/readyz _tokenproxy/metrics; do
    curl -sf "http://127.0.0.1:$PROXY_PORT/$path" -o /dev/null || { echo "startup-order.sh: /$path failed" >&2; exit 1; }
done
kill -TERM "$proxy"
wait "$proxy" || true
[ -s "$work/callgrind.out" ] || { echo "startup-order.sh: callgrind wrote nothing:" >&2; tail -5 "$work/valgrind.log" >&2; exit 1; }

python3 - "$work/callgrind.out" "$work/tokenproxy" > scripts/startup.order <<'PY'
import re
import sys

# callgrind names an object (ob=, cob=) or function (fn=, cfn=) in full the first time and
# by its number "(N)" after that. A function runs inside the binary when it is listed under
# the binary's object, or called with the binary as the callee's object.
path, binary = sys.argv[1], sys.argv[2]
objects, functions, names = {}, {}, set()

def resolve(table, text):
    match = re.match(r"\((\d+)\)(?: (.*))?$", text)
    if not match:
        return text
    number, name = match.groups()
    if name is not None:
        table[number] = name
    return table.get(number)

current_object = callee_object = None
with open(path, errors="replace") as lines:
    for line in lines:
        key, _, value = line.rstrip("\n").partition("=")
        if key == "ob":
            current_object = resolve(objects, value)
        elif key == "cob":
            callee_object = resolve(objects, value)
        elif key in ("fn", "cfn"):
            name = resolve(functions, value)
            owner = current_object if key == "fn" else (callee_object or current_object)
            if key == "cfn":
                callee_object = None
            if owner == binary and name:
                # "'2" marks a recursion level; an address or "(below main)" has no symbol.
                name = re.sub(r"'\d+$", "", name)
                if not name.startswith("0x") and " " not in name:
                    names.add(name)
for name in sorted(names):
    print(name)
PY
echo "scripts/startup.order: $(wc -l < scripts/startup.order) functions" >&2
