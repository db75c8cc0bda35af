#!/usr/bin/env bash
# The test command: installs what the build and the tests need on a Debian machine with the
# Swift toolchain (system packages through apt, Python packages into the project's own
# virtual environment `.venv`), checks the layers, builds and runs the whole test suite,
# checks the deploy artifacts and builds, lints, installs, runs and purges the Debian package
# (scripts/check-deploy.sh; the package is made from the release build, which this adds),
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

# The deploy artifacts and the package, each checked by the tool its users trust
# (docs/contributing/deploy-checks.md).
TOKENPROXY_BIN=.build/debug/tokenproxy scripts/check-deploy.sh

if [ "${FUZZ_SECONDS:-0}" -gt 0 ] && [ -x fuzz/run.sh ]; then
    fuzz/run.sh all "$FUZZ_SECONDS"
fi
