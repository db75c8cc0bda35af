#!/usr/bin/env bash
# The test command: installs what the build and the tests need on a Debian machine with the
# Swift toolchain (system packages through apt, Python packages into the project's own
# virtual environment `.venv`), checks the layers, builds and runs the whole test suite,
# checks the deploy artifacts (scripts/check-deploy.sh), then gives each fuzz target a short
# run when FUZZ_SECONDS is above zero (CI sets it).
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
# Every folder of the core uses only the layers below it (docs/contributing/architecture.md).
python3 scripts/check-layers.py
swift build
swift test

# The deploy artifacts, each checked by the tool its users trust (deploy/README.md).
TOKENPROXY_BIN=.build/debug/tokenproxy scripts/check-deploy.sh

if [ "${FUZZ_SECONDS:-0}" -gt 0 ] && [ -x fuzz/run.sh ]; then
    fuzz/run.sh all "$FUZZ_SECONDS"
fi
