#!/usr/bin/env bash
# Builds the release binary as it ships: the one build of the Dockerfile, the benchmark
# (bench/run.sh, bench/compare.sh) and the image check (scripts/image-rootfs.sh). Prints the
# binary's path as its last line; the build's own output goes to standard error.
#
#   scripts/build-release.sh                   # scratch folder .build-release
#   scripts/build-release.sh .build-bench      # another scratch folder
#   STARTUP_ORDER=none scripts/build-release.sh .build-order   # without the start-up layout
#
# - Static Swift runtime: the binary needs only libcurl, hiredis and the C and C++ runtime
#   libraries at run time (the Debian package's Depends, scripts/package-deb.sh).
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
# The commit `--version` names (docs/reference/cli.md, "Version"): none for a checkout at the
# release tag of VERSION (`vX.Y.Z` or `X.Y.Z`) with no uncommitted change, else the commit,
# marked when the checkout has uncommitted changes. A one-line object defines it and is
# linked in under a name made from its contents, so a new commit relinks the binary and
# compiles nothing again. Without git (a container build's context) no commit is recorded.
version=$(tr -d '[:space:]' <VERSION)
if commit=$(git rev-parse --short=12 HEAD 2>/dev/null); then
    clean=yes
    git diff --quiet HEAD -- 2>/dev/null || clean=no
    if [ "$clean" = yes ] && git tag --points-at HEAD | grep -qxE "v?${version//./\\.}"; then
        commit=""
    elif [ "$clean" = no ]; then
        commit="$commit, with uncommitted changes"
    fi
    mkdir -p "$scratch/build-commit"
    object="$(cd "$scratch/build-commit" && pwd)/$(printf '%s' "$commit" | sha256sum | cut -c1-16).o"
    if [ ! -f "$object" ]; then
        printf 'const char tp_build_commit[] = "%s";\n' "$commit" >"$object.c"
        clang -c -fPIC -O2 -o "$object" "$object.c"
    fi
    flags+=(-Xlinker "$object")
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
