#!/usr/bin/env bash
# The test command: installs what the build and the tests need on a Debian machine with the
# Swift toolchain (system packages through apt, Python packages into the project's own
# virtual environment `.venv`), then builds and runs the whole test suite, then gives each
# fuzz target a short run when FUZZ_SECONDS is above zero (CI sets it).
set -euo pipefail
cd "$(dirname "$0")/.."

# libcurl for the build; nginx and openssl for the TLS interoperability tests; chromium for
# the browser-forgery tests; python3-venv for the project's own Python environment.
packages=(libcurl4-openssl-dev pkg-config ca-certificates openssl nginx-light chromium python3-venv)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    export DEBIAN_FRONTEND=noninteractive
    # The tests start their own nginx; keep the package from starting a system one on port 80.
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee /usr/sbin/policy-rc.d >/dev/null
        "${sudo[@]}" chmod +x /usr/sbin/policy-rc.d
        trap '"${sudo[@]}" rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The interoperability tests run a real OAuth 2 server built on Authlib, from the project's
# virtual environment (the tests look for .venv/bin/python3, or $TOKENPROXY_PYTHON).
if [ ! -x .venv/bin/python3 ]; then
    python3 -m venv .venv
fi
.venv/bin/python3 -m pip install -q --disable-pip-version-check -r Tests/Interop/requirements.txt

swift --version
swift build
swift test

if [ "${FUZZ_SECONDS:-0}" -gt 0 ] && [ -x fuzz/run.sh ]; then
    fuzz/run.sh all "$FUZZ_SECONDS"
fi
