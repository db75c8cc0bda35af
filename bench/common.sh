# shellcheck shell=bash
# Shared by bench/run.sh, bench/compare.sh and bench/libcurl-floor.sh (sourced, not run): a
# scratch folder removed at exit together with the processes listed in `pids`, a CA with a
# server certificate for 127.0.0.1 and localhost in it, and a local HTTPS upstream.

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

# Starts a local HTTPS nginx on 127.0.0.1:$1 serving $work/www/1k (1 KiB), closing a
# kept-alive connection after $2 requests, and waits until it accepts connections.
bench_upstream() {
    local port=$1 keepalive_requests=$2 nginx user=""
    nginx=$(command -v nginx || echo /usr/sbin/nginx)
    [ -x "$nginx" ] || { echo "nginx is needed (apt-get install nginx-light)" >&2; exit 2; }
    mkdir -p "$work/www" "$work/upstream"
    head -c 1024 /dev/zero | tr '\0' 'a' > "$work/www/1k"
    [ "$(id -u)" = 0 ] && user="user root;"
    cat > "$work/upstream/nginx.conf" <<CONF
$user
worker_processes auto;
events { worker_connections 4096; }
pid $work/upstream/nginx.pid;
error_log $work/upstream/error.log warn;
http {
  access_log off;
  client_body_temp_path $work/upstream/b; proxy_temp_path $work/upstream/p; fastcgi_temp_path $work/upstream/f;
  uwsgi_temp_path $work/upstream/u; scgi_temp_path $work/upstream/s;
  keepalive_requests $keepalive_requests;
  server {
    listen 127.0.0.1:$port ssl;
    ssl_certificate $work/server.pem;
    ssl_certificate_key $work/server.key;
    root $work/www;
  }
}
CONF
    "$nginx" -p "$work/upstream" -c "$work/upstream/nginx.conf" -g 'daemon off;' & pids+=($!)
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return
        sleep 0.1
    done
}
