#!/usr/bin/env bash
# Runs the container image without a container engine: assembles the filesystem of the
# Dockerfile's runtime stage (Debian bookworm minbase, the user 10001, the Debian package built
# as the Dockerfile builds it and installed by apt with what it depends on, ca-certificates,
# the health check script),
# then runs `tokenproxy serve` in it with chroot as user 10001, the root filesystem mounted
# read-only and only the state volume writable, and sends one request through it to a local
# upstream on loopback, with a static token from a file secret and one from a client_credentials
# token endpoint. Succeeds when the upstream saw both injected Authorization headers and the
# token store was written to the state volume.
#
# Needs root (debootstrap, mounts, chroot), debootstrap and python3; takes several minutes.
# Not part of CI: scripts/check-deploy.sh runs the static checks and the package's own
# install check (docs/contributing/deploy-checks.md).
#
#   bash scripts/image-rootfs.sh            # builds, assembles, runs, removes the root
#   KEEP_ROOTFS=1 bash scripts/image-rootfs.sh   # keeps the root (path printed) for a look
#
# The Debian archive is the one this machine's apt uses: debootstrap's default mirror, or
# DEBIAN_MIRROR; the apt sources of this machine are then copied in, so that the packages come
# with their security updates, as the image's `apt-get install` gets them.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" -eq 0 ] || { echo "image-rootfs.sh: run as root (debootstrap, mount, chroot)" >&2; exit 2; }
for tool in debootstrap chroot setpriv unshare python3 curl; do
    command -v "$tool" >/dev/null || { echo "image-rootfs.sh: $tool is missing (apt-get install debootstrap curl)" >&2; exit 2; }
done

uid=10001
work="$(mktemp -d /var/tmp/tokenproxy-image.XXXXXX)"
root="$work/root"
cleanup() {
    if [ "${KEEP_ROOTFS:-0}" = 1 ]; then echo "kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }

step "build: scripts/package-deb.sh, as the Dockerfile builds"
binary=$(scripts/build-release.sh .build-image | tail -n 1)
deb=$(scripts/package-deb.sh "$binary" | tail -n 1)

step "root filesystem: debootstrap --variant=minbase bookworm, then apt-get install the package and ca-certificates"
# shellcheck disable=SC2086  # DEBIAN_MIRROR is one optional word
debootstrap --variant=minbase bookworm "$root" ${DEBIAN_MIRROR:-} >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log"; exit 1; }
cp /etc/apt/sources.list "$root/etc/apt/sources.list" 2>/dev/null || true
if [ -d /etc/apt/sources.list.d ]; then cp -r /etc/apt/sources.list.d/. "$root/etc/apt/sources.list.d/"; fi
# The Dockerfile's COPY of the package and its runtime RUN line, in the chroot.
cp "$deb" "$root/tmp/tokenproxy.deb"
chroot "$root" /bin/sh -c '
    export DEBIAN_FRONTEND=noninteractive
    groupadd --system --gid 10001 tokenproxy \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/tokenproxy --no-create-home \
        --shell /usr/sbin/nologin tokenproxy \
    && install -d -o 10001 -g 10001 -m 0700 /var/lib/tokenproxy \
    && apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends /tmp/tokenproxy.deb ca-certificates >/dev/null \
    && rm -rf /var/lib/apt/lists/* /tmp/tokenproxy.deb'
# The Dockerfile's COPY of the health check.
install -D -m 0755 deploy/docker/healthcheck.sh "$root/usr/local/lib/tokenproxy/healthcheck"
# shellcheck disable=SC2016  # ${Version} is dpkg-query's format, not the shell's
echo "debian $(cat "$root/etc/debian_version"), $(chroot "$root" dpkg-query -W -f '${Version}' libcurl4) libcurl4," \
    "tokenproxy $(du -h "$root/usr/bin/tokenproxy" | cut -f1)"

step "config, secret and state: what the container gets as mounts"
mkdir -p "$work/config" "$work/secrets" "$work/state"
ports="$(python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')"
read -r proxy_port upstream_port <<<"$ports"
token="rootfs-$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
issued="issued-$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
printf '%s\n' "$token" >"$work/secrets/upstream_token"
printf 'rootfs-client-secret\n' >"$work/secrets/client_secret"
chown "$uid:$uid" "$work/secrets/upstream_token" "$work/secrets/client_secret" "$work/state"
chmod 0400 "$work/secrets/upstream_token" "$work/secrets/client_secret"
# A secret as Kubernetes and Docker mount one: root's, read-only for everybody.
printf 'mounted\n' >"$work/secrets/mounted_token"
chmod 0444 "$work/secrets/mounted_token"
cat >"$work/config/mounted-secret.json" <<JSON
{
  "providers": {"mounted": {"grant": "static", "token": {"file": "/run/secrets/mounted_token"}}},
  "routes": [{"path_prefix": "/mounted", "upstream": "https://api.example.com", "provider": "mounted"}]
}
JSON
chmod 0700 "$work/state"
cat >"$work/config/proxy.json" <<JSON
{
  "listen": "127.0.0.1:$proxy_port",
  "providers": {
    "upstream": {"grant": "static", "token": {"file": "/run/secrets/upstream_token"}},
    "issuer": {"grant": "client_credentials", "token_url": "http://127.0.0.1:$upstream_port/token",
               "allow_insecure_endpoints": true, "client_id": "rootfs",
               "client_secret": {"file": "/run/secrets/client_secret"}}
  },
  "routes": [
    {"path_prefix": "/echo", "upstream": "http://127.0.0.1:$upstream_port",
     "provider": "upstream", "allow_insecure_upstream": true},
    {"path_prefix": "/issued", "upstream": "http://127.0.0.1:$upstream_port",
     "provider": "issuer", "allow_insecure_upstream": true}
  ]
}
JSON

step "upstream: python3 on 127.0.0.1:$upstream_port, answering with the Authorization it received"
# POST /token is a client_credentials token endpoint (RFC 6749 §4.4) issuing one fixed token.
python3 - "$upstream_port" "$issued" >"$work/upstream.log" 2>&1 <<'PY' &
import http.server, json, sys
class Echo(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.answer({"access_token": sys.argv[2], "token_type": "Bearer", "expires_in": 3600})
    def do_GET(self):
        self.answer({"path": self.path, "authorization": self.headers.get("Authorization")})
    def answer(self, value):
        body = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Echo).serve_forever()
PY
upstream_pid=$!
trap 'kill "$upstream_pid" 2>/dev/null || true; cleanup' EXIT

step "run: a private mount namespace, root read-only, tokenproxy as $uid:$uid"
export root work uid proxy_port token issued
unshare --mount --propagation private bash -euo pipefail <<'INNER'
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
mkdir -p "$root/etc/tokenproxy" "$root/run/secrets"
mount --bind "$work/config" "$root/etc/tokenproxy"
mount --bind "$work/secrets" "$root/run/secrets"
mount --bind "$work/state" "$root/var/lib/tokenproxy"
mount -o remount,bind,ro "$root/etc/tokenproxy"
mount -o remount,bind,ro "$root/run/secrets"
mount -o remount,bind,ro "$root"
if touch "$root/usr/local/bin/.probe" 2>/dev/null; then echo "the root is writable"; exit 1; fi
echo "mounts: / read-only, /etc/tokenproxy and /run/secrets read-only, /var/lib/tokenproxy writable, no writable /tmp"

# The image's environment (ENV lines, and HOME from the user's passwd entry), nothing else.
in_image=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    XDG_STATE_HOME=/var/lib/tokenproxy HOME=/var/lib/tokenproxy)
as_user=(setpriv --no-new-privs chroot --userspec="$uid:$uid" --groups="$uid" "$root")

# Memory that is never writable and executable at once (PR_SET_MDWE, Linux 6.3+), as systemd's
# MemoryDenyWriteExecute= asks of the service; inherited by everything tokenproxy runs.
mdwe=(python3 -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
print("MemoryDenyWriteExecute (PR_SET_MDWE):", "on" if libc.prctl(65, 1, 0, 0, 0) == 0 else "unavailable, errno %d" % ctypes.get_errno(), file=sys.stderr)
os.execvp(sys.argv[1], sys.argv[1:])')

"${as_user[@]}" "${in_image[@]}" /usr/bin/tokenproxy check --config /etc/tokenproxy/proxy.json
"${mdwe[@]}" "${as_user[@]}" "${in_image[@]}" /usr/bin/tokenproxy serve --config /etc/tokenproxy/proxy.json \
    >"$work/proxy.log" 2>&1 &
proxy=$!
for _ in $(seq 1 100); do
    curl -fsS -o /dev/null "http://127.0.0.1:$proxy_port/_tokenproxy/healthz" 2>/dev/null && break
    kill -0 "$proxy" 2>/dev/null || { cat "$work/proxy.log"; echo "tokenproxy exited"; exit 1; }
    sleep 0.1
done
echo "process: $(ps -o uid=,gid=,comm= -p "$proxy" | tr -s ' ') (uid, gid, command)"

answer="$(curl -sS "http://127.0.0.1:$proxy_port/echo/hello?x=1")"
echo "GET /echo/hello?x=1 -> $answer" | sed "s/$token/<the secret file's token>/"
issued_answer="$(curl -sS "http://127.0.0.1:$proxy_port/issued/data")"
echo "GET /issued/data -> $issued_answer" | sed "s/$issued/<the token endpoint's token>/"
healthz="$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$proxy_port/_tokenproxy/healthz")"
readyz="$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$proxy_port/_tokenproxy/readyz")"
echo "healthz -> $healthz, readyz -> $readyz"
"${as_user[@]}" "${in_image[@]}" TOKENPROXY_HEALTH_ADDR="127.0.0.1:$proxy_port" \
    /bin/bash /usr/local/lib/tokenproxy/healthcheck && echo "image HEALTHCHECK -> healthy"

kill -HUP "$proxy"
after_reload="$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$proxy_port/echo/again")"
echo "SIGHUP (reload) -> still serving: GET /echo/again -> $after_reload"

# Informational: the secret rules accept another user's read-only file (docs/reference/security.md).
if "${as_user[@]}" "${in_image[@]}" /usr/bin/tokenproxy check --config /etc/tokenproxy/mounted-secret.json \
    >"$work/mounted.log" 2>&1; then
    echo "a root-owned 0444 secret file (a Kubernetes or Docker secret mount): accepted"
else
    echo "a root-owned 0444 secret file (a Kubernetes or Docker secret mount): REFUSED:"
    sed 's/^/  /' "$work/mounted.log"
fi

kill -TERM "$proxy"
status=0
wait "$proxy" || status=$?
echo "SIGTERM -> exit $status"
echo "written to the state volume: $(cd "$work/state" && find . -mindepth 1 -printf '%p (mode %m, uid %U) ' | sed 's/ $//')"
echo "proxy log:"; sed 's/^/  /' "$work/proxy.log"

expected="\"authorization\": \"Bearer $token\""
[[ "$answer" == *"$expected"* ]] || { echo "FAILED: the upstream did not get the injected header"; exit 1; }
[[ "$issued_answer" == *"\"authorization\": \"Bearer $issued\""* ]] \
    || { echo "FAILED: the client_credentials route did not get its token"; exit 1; }
[ -f "$work/state/tokenproxy/tokens.json" ] || { echo "FAILED: no token store in the state volume"; exit 1; }
[ "$healthz" = 200 ] && [ "$after_reload" = 200 ] && [ "$status" = 0 ] \
    || { echo "FAILED: healthz $healthz, after reload $after_reload, exit $status"; exit 1; }
echo "PASSED: served in the image's root filesystem, read-only, as user $uid, with the injected headers; the token store is on the state volume"
INNER
