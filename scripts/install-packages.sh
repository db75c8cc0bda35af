#!/usr/bin/env bash
# Installs the Debian packages tokenproxy needs that are missing: `build` for building and
# running it (the headers of libcurl and of hiredis, the Redis client the shared token store
# links), `package` for making the Debian package as well (dpkg-dev, binutils), `test` for the test suite as well (nginx and openssl for the
# TLS tests, Chromium for the browser tests, Prometheus and promtool for the metrics tests,
# python3-venv for the project's Python environment, git and fcgiwrap for the git credential
# helper's tests against `git http-backend`, kubectl for the exec credential plugin's,
# redis-server for the Redis token store's, glewlwyd (an OpenID Connect server with DPoP and mTLS)
# for the sender-constrained tokens'; dpkg-dev, binutils, lintian, man-db, systemd and
# curl to build, lint, install and run the Debian package in scripts/check-deploy.sh). Uses
# sudo only when not run as root, so it works in a bare container too.
set -euo pipefail

packages=(libcurl4-openssl-dev libhiredis-dev pkg-config ca-certificates)
case "${1:-build}" in
    build) ;;
    package) packages+=(dpkg-dev binutils) ;;
    test)
        packages+=(openssl nginx-light chromium prometheus python3-venv git fcgiwrap redis-server glewlwyd
            dpkg-dev binutils lintian man-db systemd curl)
        ;;
    *) echo "usage: $0 [build|package|test]" >&2; exit 2 ;;
esac
# Debian's kubectl, unless a kubectl (for instance the Google Cloud SDK's) is there already:
# the two packages own the same file.
if [ "${1:-build}" = test ] && ! command -v kubectl >/dev/null; then
    packages+=(kubernetes-client)
fi

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -gt 0 ] || exit 0

as_root=()
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "installing ${missing[*]} needs root or sudo" >&2; exit 1; }
    as_root=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
# The tests start their own nginx; keep the package from starting a system one on port 80.
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | "${as_root[@]}" tee /usr/sbin/policy-rc.d >/dev/null
    "${as_root[@]}" chmod +x /usr/sbin/policy-rc.d
    trap '"${as_root[@]}" rm -f /usr/sbin/policy-rc.d' EXIT
fi
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
