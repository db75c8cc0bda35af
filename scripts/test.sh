#!/usr/bin/env bash
# The test command: installs what the build and the tests need on a Debian machine with the
# Swift toolchain (system packages through apt, Python packages into the project's own
# virtual environment `.venv`), checks the layers, builds and runs the whole test suite, runs
# the concurrency suites again under the thread sanitizer, checks the deploy artifacts and
# builds, lints, installs, runs and purges the Debian package (scripts/check-deploy.sh; the
# package is made from the release build, which this adds),
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

# The suites where threads hand state to each other, again under the thread sanitizer, which
# reports any access to shared state that no lock or queue orders (docs/contributing/
# architecture.md, "Concurrency"): connections and their contexts, the engines and their
# transfers, tunnels, the deadline thread, the credential threads, the log writer, the token
# caches and stores. The suites that load the machine on purpose (hundreds of clients,
# descriptor exhaustion, fault storms) stay out: under the sanitizer's slowdown their time
# limits would fail, not their logic. The build lives in a directory of its own, so the debug
# build above is not rebuilt. A report stops the run; the suppressions file holds only false
# positives, each with its reason. ForwardingTests' 3 MiB uploads are left out: under the
# sanitizer two of them at once take about 15 s, and the proxy closes the connection before
# answering (the sanitizer reports nothing there; the plain run above covers them).
tsan_suites=(
    SerialContextTests InPlaceOrderTests BusyConnectionTests ServerSocketTests BackPressureTests
    StreamAndAbortTests AbortedExchangeTests ExchangeLifetimeTests
    EngineWakeUpTests EngineIdleTests EngineDeadlineTests EngineBurstTests TransferFlowControlTests SeveralEnginesTests
    DroppedUpstreamConnectionTests LostUpstreamConnectionTests ClosingUpstreamTests UpstreamFetcherTests
    ForwardingTests UnauthorizedReplayTests
    WebSocketTunnelTests TunnelDrainTests TunnelEdgeTests
    DeadlineTests TokenWaitTests BackgroundRefreshTests CredentialWorkerTests MachineGrantTests
    ClientCredentialsTests ReadinessTests StoreWatchTests SharedStoreTests LogWriterTests ProviderReloadTests
    DPoPTests
)
TSAN_OPTIONS="suppressions=$PWD/scripts/tsan.supp halt_on_error=1 ${TSAN_OPTIONS:-}" \
    swift test --sanitize=thread --scratch-path .build-tsan \
    --filter "^TokenProxyCoreTests\.($(IFS='|'; echo "${tsan_suites[*]}"))\b" \
    --skip "uploadsByContentLengthArriveIntact"

# The deploy artifacts and the package, each checked by the tool its users trust
# (docs/contributing/deploy-checks.md).
TOKENPROXY_BIN=.build/debug/tokenproxy scripts/check-deploy.sh

if [ "${FUZZ_SECONDS:-0}" -gt 0 ] && [ -x fuzz/run.sh ]; then
    fuzz/run.sh all "$FUZZ_SECONDS"
fi
