#!/usr/bin/env bash
# Builds the Debian package tokenproxy_VERSION-1_ARCH.deb (deploy/README.md, "The Debian
# package") and prints its path as its last line; everything else goes to standard error.
#
#   scripts/package-deb.sh              # packages the release build (scripts/build-release.sh)
#   scripts/package-deb.sh BINARY       # packages BINARY, a binary that build made already
#
# The version is the VERSION file's. What the package holds:
#   /usr/bin/tokenproxy                          the binary, stripped
#   /usr/share/man/man1/tokenproxy*.1.gz         one page per command (tokenproxy.serve(1), ...), from the command
#                                                definitions (swift-argument-parser's
#                                                generate-manual plugin)
#   bash, zsh and fish completions               from `tokenproxy --generate-completion-script`
#   /usr/lib/systemd/system/tokenproxy.service       deploy/systemd/tokenproxy.service
#   /usr/lib/sysusers.d, /usr/lib/tmpfiles.d     the system user and the state directory
#   /etc/tokenproxy/proxy.json                   an example configuration (a conffile)
#   /usr/share/doc/tokenproxy/                   copyright, changelog.gz (CHANGELOG.md),
#                                                changelog.Debian.gz
# Depends is computed by dpkg-shlibdeps from the binary's shared libraries. Needs dpkg-dev,
# binutils (strip) and the Swift toolchain (for the manual pages).
set -euo pipefail
cd "$(dirname "$0")/.."

binary=${1:-}
if [ -z "$binary" ]; then
    binary=$(scripts/build-release.sh | tail -n 1)
fi
[ -x "$binary" ] || { echo "package-deb.sh: $binary is not an executable" >&2; exit 2; }

version=$(tr -d '[:space:]' <VERSION)
package_version="$version-1"
arch=$(dpkg --print-architecture)
# The release date: the CHANGELOG entry of this version, `## 0.2.0 — 2026-11-28`.
date=$(sed -n "s/^## ${version//./\\.} — \([0-9-]*\)\$/\1/p" CHANGELOG.md)
[ -n "$date" ] || { echo "package-deb.sh: CHANGELOG.md has no entry '## $version — DATE'" >&2; exit 2; }
maintainer=$(sed -n 's/^Maintainer: //p' deploy/debian/control)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root="$work/root"
doc="$root/usr/share/doc/tokenproxy"
install -d "$root/DEBIAN" "$root/usr/bin" "$doc" "$root/usr/share/man/man1"

install -m 0755 "$binary" "$root/usr/bin/tokenproxy"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/tokenproxy"

# Manual pages: generate-manual reads the command definitions (`--experimental-dump-help`) of
# the package's own build of the tokenproxy product, the same sources as the binary above.
# The debug build is the one the tests build already; the plugin reuses it.
rm -rf .build/plugins/GenerateManual/outputs/tokenproxy
swift package plugin generate-manual --configuration debug --multi-page --date "$date" \
    --authors "$maintainer" >&2
manuals=.build/plugins/GenerateManual/outputs/tokenproxy
# The pages name a subcommand's page `.Nm "tokenproxy serve"`, which man renders but
# lexgrog (man-db's whatis indexer) cannot parse, so `apropos` would not list it: the NAME
# section takes the page's own name (`tokenproxy.serve`, what `man` is given), and the
# synopsis keeps the command as typed. The quotes around `.Nd`'s text go as well. (lintian's
# bad-whatis-entry checks the result.)
for page in "$manuals"/*.1; do
    name=$(basename "$page" .1)
    command=${name//./ }
    sed -e "s/^\.Nm \"$command\"\$/.Nm $name/" -e "s/^\.Nm\$/.Nm $command/" \
        -e 's/^\.Nd "\(.*\)"$/.Nd \1/' "$page" | gzip -9n >"$root/usr/share/man/man1/$name.1.gz"
done
[ -f "$root/usr/share/man/man1/tokenproxy.1.gz" ] || { echo "package-deb.sh: no tokenproxy.1 in $manuals" >&2; exit 1; }

install -d "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
    "$root/usr/share/fish/vendor_completions.d"
# A bash completion is sourced, not run: without the generator's `#!/bin/bash` line.
"$binary" --generate-completion-script bash | sed '1{/^#!/d}' >"$root/usr/share/bash-completion/completions/tokenproxy"
"$binary" --generate-completion-script zsh >"$root/usr/share/zsh/vendor-completions/_tokenproxy"
"$binary" --generate-completion-script fish >"$root/usr/share/fish/vendor_completions.d/tokenproxy.fish"

install -D -m 0644 deploy/systemd/tokenproxy.service "$root/usr/lib/systemd/system/tokenproxy.service"
install -D -m 0644 deploy/debian/sysusers.conf "$root/usr/lib/sysusers.d/tokenproxy.conf"
install -D -m 0644 deploy/debian/tmpfiles.conf "$root/usr/lib/tmpfiles.d/tokenproxy.conf"
install -D -m 0644 deploy/debian/proxy.json "$root/etc/tokenproxy/proxy.json"
# Overrides of lintian tags, each with its reason in a comment above it; none are shipped when
# the file holds no override.
if grep -qv '^\(#\|$\)' deploy/debian/lintian-overrides; then
    install -D -m 0644 deploy/debian/lintian-overrides "$root/usr/share/lintian/overrides/tokenproxy"
fi

install -m 0644 deploy/debian/copyright "$doc/copyright"
gzip -9n <CHANGELOG.md >"$doc/changelog.gz"
{
    printf 'tokenproxy (%s) unstable; urgency=medium\n\n' "$package_version"
    printf '  * Release %s: /usr/share/doc/tokenproxy/changelog.gz says what changed.\n\n' "$version"
    printf ' -- %s  %s\n' "$maintainer" "$(date -u -R -d "$date")"
} | gzip -9n >"$doc/changelog.Debian.gz"

for script in postinst prerm postrm; do
    install -m 0755 "deploy/debian/$script" "$root/DEBIAN/$script"
done
printf '/etc/tokenproxy/proxy.json\n' >"$root/DEBIAN/conffiles"

# dpkg-shlibdeps works in a source tree: a debian/control naming the package is enough.
mkdir -p "$work/src/debian"
printf 'Source: tokenproxy\n\nPackage: tokenproxy\nArchitecture: any\n' >"$work/src/debian/control"
depends=$(cd "$work/src" && dpkg-shlibdeps -O "$root/usr/bin/tokenproxy" | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "package-deb.sh: dpkg-shlibdeps found no dependency" >&2; exit 1; }

{
    sed -n '/^Package:/,/^Maintainer:/p' deploy/debian/control
    printf 'Version: %s\nArchitecture: %s\n' "$package_version" "$arch"
    printf 'Installed-Size: %s\n' "$(du -sk --exclude=DEBIAN "$root" | cut -f1)"
    printf 'Depends: %s\n' "$depends"
    sed -n '/^Description:/,$p' deploy/debian/control
} >"$root/DEBIAN/control"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f ! -path './etc/*' -printf '%P\n' | sort | xargs md5sum) \
    >"$root/DEBIAN/md5sums"

find "$root" -type d -exec chmod 0755 {} +
out=${PACKAGE_DIR:-.build-deb}
mkdir -p "$out"
deb="$out/tokenproxy_${package_version}_${arch}.deb"
dpkg-deb --build --root-owner-group -Zxz "$root" "$deb" >&2
echo "$deb"
