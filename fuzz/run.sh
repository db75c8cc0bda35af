#!/usr/bin/env bash
# Builds the libFuzzer targets with the address sanitizer and runs one for a time:
#   fuzz/run.sh TARGET SECONDS    one target (FuzzRequestParser, FuzzResponseHead,
#                                 FuzzConfiguration, FuzzTokenResponse, FuzzDPoPChallenge)
#   fuzz/run.sh all SECONDS       each target in turn, SECONDS each
# A target starts from its seed corpus (fuzz/corpus/TARGET) plus what earlier runs found
# (.build-fuzz/corpus/TARGET). A crash, a failed check or a hang stops the run with a
# non-zero exit and leaves the input in fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")"

targets=(FuzzRequestParser FuzzResponseHead FuzzConfiguration FuzzTokenResponse FuzzDPoPChallenge)
target="${1:-}"
seconds="${2:-}"
if [ -z "$target" ] || ! [[ "$seconds" =~ ^[0-9]+$ ]]; then
    echo "usage: $0 TARGET|all SECONDS (targets: ${targets[*]})" >&2
    exit 2
fi
if [ "$target" = all ]; then
    selected=("${targets[@]}")
else
    [[ " ${targets[*]} " == *" $target "* ]] || { echo "unknown target $target (targets: ${targets[*]})" >&2; exit 2; }
    selected=("$target")
fi

# The Swift runtime's own crash reporter reads the stack in ways the address sanitizer
# reports as a second error; the sanitizer's report is the one wanted.
export SWIFT_BACKTRACE=enable=no

scratch=../.build-fuzz
# The fuzz targets are targets of the main package that exist only with TOKENPROXY_FUZZ=1
# (Package.swift). The sanitizer flags are also given to swiftc itself: SwiftPM's --sanitize
# alone was seen to leave the Swift modules without coverage instrumentation, which makes
# libFuzzer blind.
export TOKENPROXY_FUZZ=1
flags=(--package-path .. --scratch-path "$scratch" -c debug --sanitize=fuzzer --sanitize=address
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table)
for name in "${selected[@]}"; do
    swift build "${flags[@]}" --product "$name"
done
bin=$(swift build "${flags[@]}" --show-bin-path)

mkdir -p artifacts
for name in "${selected[@]}"; do
    found="$scratch/corpus/$name"
    mkdir -p "$found" "corpus/$name"
    echo "== $name for ${seconds}s"
    # -timeout: an input that takes more than 10 s is reported as a hang.
    "$bin/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
        -artifact_prefix="artifacts/$name-" "$found" "corpus/$name"
done
