#!/usr/bin/env bash
# Builds the release binary as it ships: the one build of the Dockerfile, the benchmark
# (bench/run.sh, bench/compare.sh) and the image check (scripts/image-rootfs.sh). Prints the
# binary's path as its last line; the build's own output goes to standard error.
#
#   scripts/build-release.sh                   # scratch folder .build-release
#   scripts/build-release.sh .build-bench      # another scratch folder
#   STARTUP_ORDER=none scripts/build-release.sh .build-order   # without the start-up layout
#
# - Static Swift runtime: the binary needs only libcurl, hiredis and the C library at run time.
# - lld with packed relative relocations (DT_RELR, glibc 2.36+): the static Swift runtime
#   carries about 88,000 relative relocations, which otherwise fill a 2 MiB table that every
#   start reads in; packed, they take 16 KiB.
# - The functions that start-up and the first requests run placed together at the front of
#   the code, in the order of scripts/startup.order (made by scripts/startup-order.sh). The
#   kernel maps a program's code in blocks of 64 KiB around each page it touches; with those
#   functions spread over 19 MiB of code, an idle proxy kept 9.4 MiB of it resident, laid
#   out together about 6 MiB (docs/performance.md, "Resident memory at rest"). A name in the
#   file that the build no longer has is skipped, so an older file only places fewer
#   functions.
set -euo pipefail
cd "$(dirname "$0")/.."

scratch=${1:-.build-release}
order=${STARTUP_ORDER:-$PWD/scripts/startup.order}
flags=(-c release --static-swift-stdlib --product tokenproxy --scratch-path "$scratch"
    -Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld -Xlinker -z -Xlinker pack-relative-relocs)
if [ "$order" != none ]; then
    [ -f "$order" ] || { echo "build-release.sh: $order is missing" >&2; exit 2; }
    flags+=(-Xlinker "--symbol-ordering-file=$order" -Xlinker --no-warn-symbol-ordering)
fi
# SwiftPM relinks only when an input it tracks changes, and the ordering file is not one:
# after scripts/startup-order.sh writes a new list, remove the binary so that it is linked
# again in the new order.
binary="$(swift build "${flags[@]}" --show-bin-path)/tokenproxy"
if [ "$order" != none ] && [ -f "$binary" ] && [ "$order" -nt "$binary" ]; then
    rm -f "$binary"
fi
swift build "${flags[@]}" >&2
echo "$(swift build "${flags[@]}" --show-bin-path)/tokenproxy"
