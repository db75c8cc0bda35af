# shellcheck shell=bash
# Shared by bench/run.sh, bench/compare.sh and bench/libcurl-floor.sh (sourced, not run): a scratch folder removed
# at exit together with the processes listed in `pids`, and a CA with a server certificate
# for 127.0.0.1 and localhost in it.

# Makes the scratch folder `work` (named after $1) and the cleanup that stops `pids`.
bench_scratch() {
    work=$(mktemp -d "/tmp/tokenproxy-$1.XXXXXX")
    pids=()
    trap bench_cleanup EXIT
}

bench_cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}

# Writes ca.pem, server.pem and server.key into $work.
bench_certificates() {
    local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
    openssl req -x509 "${ec[@]}" -keyout "$work/ca.key" -out "$work/ca.pem" -days 2 -subj "/CN=bench CA" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
    openssl req "${ec[@]}" -keyout "$work/server.key" -out "$work/server.csr" -subj "/CN=localhost" 2>/dev/null
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > "$work/server.ext"
    openssl x509 -req -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial \
        -out "$work/server.pem" -days 2 -extfile "$work/server.ext" 2>/dev/null
}
