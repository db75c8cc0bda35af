#!/usr/bin/env bash
# Checks the deployable artifacts with the tools their users trust, and exits non-zero when
# any check fails (docs/contributing/deploy-checks.md):
#   - the Debian package (scripts/package-deb.sh): lintian with no error and no warning; then
#     installed with apt, run (--version against VERSION, `man tokenproxy`, `check` of the
#     example configuration, `systemd-analyze verify` of the installed unit, the demo served
#     from /usr/bin/tokenproxy) and purged, leaving the file system as it was;
#   - Dockerfile: hadolint, checkov (dockerfile);
#   - deploy/kubernetes/*.yaml: kubernetes-validate (strict, against the Kubernetes schemas of
#     the newest and the oldest supported minor) and checkov (kubernetes), and every embedded
#     tokenproxy config (a ConfigMap's proxy.json) with `tokenproxy check`;
#   - deploy/systemd/tokenproxy.service: `systemd-analyze verify` and
#     `systemd-analyze security --offline=true` with an exposure of at most 2.0;
#   - the shell scripts of deploy/, scripts/ and bench/: shellcheck.
# Installs what it needs: the PyPI tools into the project's own virtual environment
# `.venv-deploy`; systemd, shellcheck, python3-venv, lintian, dpkg-dev, binutils, man-db and
# curl through apt when missing. Builds the debug binary for `tokenproxy check` (`swift
# build`) unless TOKENPROXY_BIN names one, and the release binary for the package
# (scripts/build-release.sh) unless TOKENPROXY_RELEASE_BIN names one. Installing and purging
# the package needs root (or sudo), and no tokenproxy package installed already.
# scripts/image-rootfs.sh, which runs the image's filesystem, is separate (it takes minutes).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(systemd shellcheck python3-venv lintian dpkg-dev binutils man-db curl)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -gt 0 ]; then
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

venv=.venv-deploy
requirements=deploy/requirements.txt
if [ ! -x "$venv/bin/python" ]; then python3 -m venv "$venv"; fi
if ! cmp -s "$requirements" "$venv/installed-requirements.txt"; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    cp "$requirements" "$venv/installed-requirements.txt"
fi

binary="${TOKENPROXY_BIN:-}"
if [ -z "$binary" ]; then
    swift build --product tokenproxy >/dev/null
    binary="$(swift build --show-bin-path)/tokenproxy"
fi

failures=()
run() {
    local name="$1"
    shift
    printf '\n== %s\n' "$name"
    if "$@"; then echo "ok: $name"; else failures+=("$name"); echo "FAILED: $name"; fi
}

# checkov: no network (no platform download, no guideline look-up), only these frameworks.
export BC_SKIP_MAPPING=TRUE CHECKOV_RUN_SCA_PACKAGE_SCAN_V2=false
checkov=("$venv/bin/checkov" --quiet --compact --skip-download)

run "hadolint Dockerfile" "$venv/bin/hadolint" --failure-threshold info Dockerfile
run "checkov Dockerfile" "${checkov[@]}" --framework dockerfile --file Dockerfile

manifests=(deploy/kubernetes/*.yaml)
for version in 1.37.0 1.30.0; do
    run "kubernetes-validate $version" "$venv/bin/kubernetes-validate" --strict --quiet \
        --kubernetes-version "$version" "${manifests[@]}"
done
run "checkov kubernetes" "${checkov[@]}" --framework kubernetes --directory deploy/kubernetes

# Every ConfigMap key ending in .json is a tokenproxy config: `check` loads it exactly as
# `serve` does (secret files that exist only in the cluster are warnings, not failures).
configs="$(mktemp -d)"
trap 'rm -rf "$configs"' EXIT
"$venv/bin/python" - "$configs" "${manifests[@]}" <<'PY'
import pathlib, sys, yaml
out = pathlib.Path(sys.argv[1])
for manifest in sys.argv[2:]:
    for document in yaml.safe_load_all(open(manifest)):
        if document and document.get("kind") == "ConfigMap":
            for key, value in (document.get("data") or {}).items():
                if key.endswith(".json"):
                    name = f"{pathlib.Path(manifest).stem}.{document['metadata']['name']}.{key}"
                    (out / name).write_text(value)
PY
config_count=0
for config in "$configs"/*.json; do
    [ -e "$config" ] || continue
    config_count=$((config_count + 1))
    run "tokenproxy check $(basename "$config")" "$binary" check --config "$config"
done
[ "$config_count" -gt 0 ] || failures+=("no tokenproxy config found in deploy/kubernetes")

# `verify` needs the ExecStart= program to exist: a copy of the unit names the built binary.
# It reports problems (an unknown key, say) as messages and still exits 0, so any output fails.
# The manual pages that Documentation= names exist once the package is installed: the
# package check verifies the installed unit with them (scripts/check-package.sh), this one
# without (--man=no).
unit=deploy/systemd/tokenproxy.service
verify_unit() {
    local copy output
    copy="$configs/$(basename "$unit")"
    sed "s#/usr/bin/tokenproxy#$(realpath "$binary")#g" "$unit" >"$copy"
    output="$(systemd-analyze verify --man=no "$copy" 2>&1)" || { echo "$output"; return 1; }
    [ -z "$output" ] || { echo "$output"; return 1; }
}
run "systemd-analyze verify" verify_unit
# The threshold is on the 0-100 scale behind the displayed 0.0-10.0 exposure: 20 is 2.0.
security_unit() {
    local output status=0
    output="$(systemd-analyze security --offline=true --threshold=20 --no-pager "$unit" 2>&1)" || status=$?
    grep -v '^✓' <<<"$output"
    return "$status"
}
run "systemd-analyze security (exposure <= 2.0)" security_unit

run "shellcheck" shellcheck -x deploy/docker/healthcheck.sh deploy/debian/postinst deploy/debian/prerm \
    deploy/debian/postrm scripts/*.sh bench/*.sh

# The Debian package, from the release binary. Its path is the last line package-deb.sh prints.
package_start=$SECONDS
deb=""
build_package() {
    local output
    output="$(scripts/package-deb.sh ${TOKENPROXY_RELEASE_BIN:+"$TOKENPROXY_RELEASE_BIN"})" || return 1
    deb="$(tail -n 1 <<<"$output")"
    [ -f "$deb" ] && echo "$deb"
}
run "package: scripts/package-deb.sh" build_package
# Errors and warnings fail; informational tags are shown. Overrides, each with its reason, are
# in deploy/debian/lintian-overrides.
lint_package() {
    lintian --fail-on error,warning --display-info "$deb"
}
[ -z "$deb" ] || run "lintian" lint_package
[ -z "$deb" ] || run "package: install, run, purge" scripts/check-package.sh "$deb"
echo "package checks took $((SECONDS - package_start)) s"

printf '\n'
if [ ${#failures[@]} -gt 0 ]; then
    printf 'check-deploy: %d failed:\n' "${#failures[@]}"
    printf '  %s\n' "${failures[@]}"
    exit 1
fi
echo "check-deploy: every check passed"
