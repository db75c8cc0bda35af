# shellcheck shell=bash
# Shared by the scripts of bench/ and scripts/startup-order.sh (sourced, not run): a scratch
# folder removed at exit together with the processes listed in `pids`, a CA with a server
# certificate for 127.0.0.1 and localhost in it, a local HTTPS upstream, and the
# configurations of tokenproxy and of nginx as the proxies measured.

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

# CPU time (user and system) of a process and its children, in clock ticks (getconf CLK_TCK
# per second).
bench_ticks() {
    local total=0 pid
    for pid in "$1" $(pgrep -P "$1" || true); do
        # A process that has exited meanwhile counts nothing.
        total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)))
    done
    echo "$total"
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

# The lines every nginx of the benches has, for an nginx whose files live in $1. In the main
# context: the user (started as root, nginx would otherwise run its workers as nobody, who
# cannot read the scratch folder), the pid file and the error log. In the http context: no
# access log, and the temporary files in $1.
bench_nginx_main() {
    [ "$(id -u)" = 0 ] && echo "user root;"
    printf 'pid %s/nginx.pid;\nerror_log %s/error.log warn;\n' "$1" "$1"
}

bench_nginx_http() {
    printf '  access_log off;\n'
    printf '  client_body_temp_path %s/b; proxy_temp_path %s/p; fastcgi_temp_path %s/f;\n' "$1" "$1" "$1"
    printf '  uwsgi_temp_path %s/u; scgi_temp_path %s/s;\n' "$1" "$1"
}

# Starts a local HTTPS nginx on 127.0.0.1:$1 serving $work/www/1k (1 KiB), closing a
# kept-alive connection after $2 requests, and waits until it accepts connections.
bench_upstream() {
    local port=$1 keepalive_requests=$2 nginx
    nginx=$(command -v nginx || echo /usr/sbin/nginx)
    [ -x "$nginx" ] || { echo "nginx is needed (apt-get install nginx-light)" >&2; exit 2; }
    mkdir -p "$work/www" "$work/upstream"
    head -c 1024 /dev/zero | tr '\0' 'a' > "$work/www/1k"
    cat > "$work/upstream/nginx.conf" <<CONF
$(bench_nginx_main "$work/upstream")
worker_processes auto;
events { worker_connections 4096; }
http {
$(bench_nginx_http "$work/upstream")
  keepalive_requests $keepalive_requests;
  server {
    listen 127.0.0.1:$port ssl;
    ssl_certificate $work/server.pem;
    ssl_certificate_key $work/server.key;
    root $work/www;
    # Any method (a static file answers POST with 405): for METHOD=POST in compare.sh.
    location = /post { return 200 "ok\n"; }
    # A token endpoint for BENCH_PROVIDER=client_credentials.
    location = /token {
      default_type application/json;
      return 200 '{"access_token": "bench-token", "token_type": "Bearer", "expires_in": 86400}';
    }
  }
}
CONF
    "$nginx" -p "$work/upstream" -c "$work/upstream/nginx.conf" -g 'daemon off;' & pids+=($!)
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return
        sleep 0.1
    done
}

# Writes the tokenproxy configuration file $1 that the benches run: listening on
# 127.0.0.1:$2, at most $3 client connections, a static token from BENCH_TOKEN, and for each
# PREFIX=PORT that follows a route to the HTTPS upstream 127.0.0.1:PORT, verified against
# the bench's CA.
bench_tokenproxy_config() {
    local file=$1 port=$2 connections=$3 route routes="" provider
    shift 3
    # BENCH_PROVIDER=client_credentials: the token comes from the upstream's /token (the
    # first route's server) once and is then served from the cache, as a sidecar's is;
    # static by default.
    provider='{"grant": "static", "token": {"env": "BENCH_TOKEN"}}'
    if [ "${BENCH_PROVIDER:-static}" = client_credentials ]; then
        route=$1
        provider="{\"grant\": \"client_credentials\", \"token_url\": \"https://127.0.0.1:${route#*=}/token\", \"client_id\": \"bench\", \"client_secret\": \"bench-secret\", \"ca_file\": \"$work/ca.pem\"}"
    fi
    for route in "$@"; do
        routes+="${routes:+,$'\n'}    {\"path_prefix\": \"${route%%=*}\", \"upstream\": \"https://127.0.0.1:${route#*=}\", \"provider\": \"bench\", \"ca_file\": \"$work/ca.pem\"}"
    done
    cat > "$file" <<CONF
{
  "listen": "127.0.0.1:$port",
  "token_store": "memory",
  "limits": {"max_connections": $connections},
  "providers": {"bench": $provider},
  "routes": [
$routes
  ]
}
CONF
}

# Writes $work/nginx/nginx.conf, nginx as a proxy beside tokenproxy: listening on
# 127.0.0.1:$1 with $2 descriptors per worker, adding the same Authorization header, and
# for each PREFIX=PORT that follows (PREFIX ending in /) passing PREFIX's requests, PREFIX
# replaced by /, to the HTTPS upstream 127.0.0.1:PORT, verified, keeping up to 64 idle
# upstream connections per worker; logs off, buffering off.
bench_nginx_proxy_config() {
    local port=$1 descriptors=$2 route name upstreams="" locations=""
    shift 2
    for route in "$@"; do
        name=upstream_${route#*=}
        upstreams+="  upstream $name { server 127.0.0.1:${route#*=}; keepalive 64; }"$'\n'
        locations+="    location ${route%%=*} { proxy_pass https://$name/; }"$'\n'
    done
    mkdir -p "$work/nginx"
    cat > "$work/nginx/nginx.conf" <<CONF
$(bench_nginx_main "$work/nginx")
worker_processes auto;
worker_rlimit_nofile $descriptors;
events { worker_connections $descriptors; }
http {
$(bench_nginx_http "$work/nginx")
  keepalive_requests 100000000;
$upstreams  proxy_http_version 1.1;
  proxy_set_header Connection "";
  proxy_set_header Authorization "Bearer bench-token";
  proxy_ssl_verify on;
  proxy_ssl_trusted_certificate $work/ca.pem;
  proxy_ssl_name localhost;
  proxy_ssl_session_reuse on;
  proxy_buffering off;
  server {
    listen 127.0.0.1:$port;
$locations  }
}
CONF
}
