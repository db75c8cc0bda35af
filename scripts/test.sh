#!/usr/bin/env bash
# The test command: installs what the build and the tests need on a Debian machine with the
# Swift toolchain (system packages through apt, Python packages into the project's own
# virtual environment `.venv`), checks the layers, builds and runs the whole test suite, runs
# it again under the thread sanitizer, checks the deploy artifacts (scripts/check-deploy.sh),
# then gives each fuzz target a short run when FUZZ_SECONDS is above zero (CI sets it).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-packages.sh test

# The interoperability tests run a real OAuth 2 server built on Authlib, from the project's
# virtual environment (the tests look for .venv/bin/python3, or $TOKENPROXY_PYTHON).
if [ ! -x .venv/bin/python3 ]; then
    python3 -m venv .venv
fi
.venv/bin/python3 -m pip install -q --disable-pip-version-check -r Tests/Interop/requirements.txt

swift --version
# Each layer is a target that may import only the targets Package.swift gives it, the
# layers below (docs/contributing/architecture.md): any other import fails this build.
swift build --build-tests --explicit-target-dependency-import-check error
swift test

# The suite again under the thread sanitizer, which reports any access to shared state that
# no lock or queue orders (docs/contributing/architecture.md, "Concurrency"). Its build
# lives in a directory of its own, so the debug build above is not rebuilt. A report ends
# the run with TSan's exit code; the suppressions file lists only false positives in system
# libraries, each with its reason.
TSAN_OPTIONS="suppressions=$PWD/scripts/tsan.supp halt_on_error=1 ${TSAN_OPTIONS:-}" \
    swift test --sanitize=thread --scratch-path .build-tsan

# The deploy artifacts, each checked by the tool its users trust (deploy/README.md).
TOKENPROXY_BIN=.build/debug/tokenproxy scripts/check-deploy.sh

if [ "${FUZZ_SECONDS:-0}" -gt 0 ] && [ -x fuzz/run.sh ]; then
    fuzz/run.sh all "$FUZZ_SECONDS"
fi
