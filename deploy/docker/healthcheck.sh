#!/bin/bash
# The image's HEALTHCHECK: GET the admin `healthz` endpoint over loopback with bash's own
# /dev/tcp, since the runtime image has no HTTP client. Healthy when the answer's status is 200.
#
# TOKENPROXY_HEALTH_ADDR (host:port or [v6]:port, default 127.0.0.1:8080) and TOKENPROXY_HEALTH_PATH (default
# /_tokenproxy/healthz) follow the config: with `admin.listen` set to 0.0.0.0:9090, use
# 127.0.0.1:9090 and /healthz. Probes skip the Host checks, so any Host works (docs/reference/http-behaviour.md).
set -u
address="${TOKENPROXY_HEALTH_ADDR:-127.0.0.1:8080}"
path="${TOKENPROXY_HEALTH_PATH:-/_tokenproxy/healthz}"
host="${address%:*}"
host="${host#[}"
host="${host%]}"
port="${address##*:}"
exec 3<>"/dev/tcp/${host}/${port}" || exit 1
printf 'GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n' "${path}" >&3
IFS=' ' read -r -t 5 _ status _ <&3 || exit 1
[[ "${status}" == "200" ]]
