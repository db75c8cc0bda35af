#!/usr/bin/env bash
# Installs a tokenproxy Debian package on this machine, runs what it installed, and purges it,
# checking that the purge leaves the file system as it found it (docs/contributing/deploy-checks.md):
#
#   scripts/check-package.sh .build-deb/tokenproxy_0.2.0-1_amd64.deb
#
# Needs root (or sudo), apt, man-db, systemd (for systemd-analyze, systemd-sysusers and
# systemd-tmpfiles) and curl, and refuses to run when a tokenproxy package is installed
# already: it would purge it. Exits non-zero at the first failure, after purging.
set -euo pipefail
cd "$(dirname "$0")/.."

deb=${1:?usage: $0 PACKAGE.deb}
[ -f "$deb" ] || { echo "check-package.sh: $deb does not exist" >&2; exit 2; }
as_root=()
[ "$(id -u)" -eq 0 ] || as_root=(sudo)
export DEBIAN_FRONTEND=noninteractive

if dpkg-query -W -f='${Status}' tokenproxy 2>/dev/null | grep -q "installed\|config-files"; then
    echo "check-package.sh: a tokenproxy package is installed already; purge it first (apt-get purge tokenproxy)" >&2
    exit 2
fi

work=$(mktemp -d)
demo_pid=""
cleanup() {
    [ -z "$demo_pid" ] || kill "$demo_pid" 2>/dev/null || true
    "${as_root[@]}" apt-get purge -y -qq tokenproxy >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# Every path under the folders a package may touch, except the package manager's own records
# and caches (dpkg's database, apt's lists, man-db's index, logs).
snapshot() {
    "${as_root[@]}" find /etc /usr /var/lib -xdev \
        \( -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/lib/ucf -o -path /var/lib/man-db \) -prune \
        -o -print | LC_ALL=C sort
}
step() { printf -- '-- %s\n' "$*"; }

snapshot >"$work/before"

step "apt-get install ./$(basename "$deb")"
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "$(realpath "$deb")" >"$work/apt.log" 2>&1 ||
    { cat "$work/apt.log"; exit 1; }
dpkg-query -W -f='${Package} ${Version} ${Status}\n' tokenproxy

step "tokenproxy --version"
version=$(tr -d '[:space:]' <VERSION)
printed=$(/usr/bin/tokenproxy --version)
echo "$printed"
case "$printed" in
    "$version" | "$version ("*) ;;
    *) echo "FAILED: --version printed '$printed', VERSION says $version"; exit 1 ;;
esac

step "man tokenproxy, man tokenproxy.serve"
for page in tokenproxy tokenproxy.serve; do
    text=$(MANPAGER=cat MANWIDTH=80 man "$page" 2>&1) || { echo "$text"; exit 1; }
    grep -q "tokenproxy" <<<"$text" || { echo "FAILED: man $page: $text"; exit 1; }
    head -n 3 <<<"$text"
done

step "tokenproxy check --config /etc/tokenproxy/proxy.json"
/usr/bin/tokenproxy check --config /etc/tokenproxy/proxy.json

step "systemd-analyze verify /usr/lib/systemd/system/tokenproxy.service"
output=$(systemd-analyze verify /usr/lib/systemd/system/tokenproxy.service 2>&1) || { echo "$output"; exit 1; }
[ -z "$output" ] || { echo "FAILED: $output"; exit 1; }

step "the system user and the state directory"
getent passwd tokenproxy
state=$(stat -c '%a %U:%G' /var/lib/tokenproxy)
echo "/var/lib/tokenproxy: $state"
[ "$state" = "700 tokenproxy:tokenproxy" ] || { echo "FAILED: /var/lib/tokenproxy is $state"; exit 1; }

step "completions"
for file in /usr/share/bash-completion/completions/tokenproxy /usr/share/zsh/vendor-completions/_tokenproxy \
    /usr/share/fish/vendor_completions.d/tokenproxy.fish; do
    [ -s "$file" ] || { echo "FAILED: $file is missing or empty"; exit 1; }
done
bash -c 'source /usr/share/bash-completion/completions/tokenproxy && complete -p tokenproxy'

step "tokenproxy demo, served from /usr/bin/tokenproxy"
/usr/bin/tokenproxy demo --listen 127.0.0.1:0 >"$work/demo.out" 2>"$work/demo.err" &
demo_pid=$!
proxy=""
for _ in $(seq 1 100); do
    proxy=$(sed -n 's/^  tokenproxy  *\(http:\/\/127\.0\.0\.1:[0-9]*\).*/\1/p' "$work/demo.out")
    [ -z "$proxy" ] || break
    sleep 0.1
done
[ -n "$proxy" ] || { cat "$work/demo.out" "$work/demo.err"; echo "FAILED: the demo did not start"; exit 1; }
status=$(curl -s -o "$work/answer" -w '%{http_code}' "$proxy/demo/hello")
echo "GET $proxy/demo/hello -> $status $(cat "$work/answer")"
[ "$status" = 200 ] || { cat "$work/demo.err"; exit 1; }
kill -INT "$demo_pid"
wait "$demo_pid" || { echo "FAILED: the demo did not exit 0 after SIGINT"; exit 1; }
demo_pid=""

step "apt-get purge tokenproxy"
"${as_root[@]}" apt-get purge -y -qq tokenproxy >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; exit 1; }
if dpkg-query -W -f='${Status}' tokenproxy 2>/dev/null | grep -q "installed\|config-files"; then
    echo "FAILED: tokenproxy is still known to dpkg"; exit 1
fi
snapshot >"$work/after"
if ! diff "$work/before" "$work/after"; then
    echo "FAILED: the purge left the file system different (< before, > after)"
    exit 1
fi
echo "purged: the same $(wc -l <"$work/after") paths as before the install"
