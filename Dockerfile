# syntax=docker/dockerfile:1
# tokenproxy container image: deploy/README.md tells how to run it (Docker, a Kubernetes sidecar)
# and how the image is checked (scripts/check-deploy.sh, scripts/image-rootfs.sh).

# Build stage: the Swift toolchain image the project is built and tested with, plus the headers
# of libcurl and hiredis (the Redis token store's client) and what the Debian package is made
# with (dpkg-dev for dpkg-shlibdeps, binutils for strip).
FROM swift:6.3.1-bookworm AS build
# DL3008 (pin apt package versions) does not fit Debian stable: the archive keeps only the
# current version of each package in bookworm and bookworm-security, so a pinned version
# disappears at the next security update and the build breaks. The base image tag fixes the
# release; apt brings its current, patched packages.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libcurl4-openssl-dev libhiredis-dev pkg-config \
        dpkg-dev binutils \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift VERSION CHANGELOG.md ./
COPY Sources ./Sources
COPY Tests ./Tests
COPY scripts/build-release.sh scripts/package-deb.sh scripts/startup.order ./scripts/
COPY deploy/debian ./deploy/debian
COPY deploy/systemd ./deploy/systemd
# scripts/package-deb.sh makes the Debian package from the one release build,
# scripts/build-release.sh (static Swift runtime, lld with packed relative relocations, the
# start-up code laid out together; docs/performance.md says why). Its manual pages come from
# swift-argument-parser's generate-manual plugin, which runs a debug build of the commands.
RUN PACKAGE_DIR=/out scripts/package-deb.sh && mv /out/tokenproxy_*.deb /out/tokenproxy.deb

# Runtime stage: the Debian package and what it depends on (libcurl, hiredis, the C and C++ runtime),
# CA certificates and an unprivileged user; nothing else. The user is made here, with a fixed
# number, before the package is installed (the package's sysusers.d file is for systemd hosts;
# this image has no systemd, and the package's scripts skip it). Nothing is written outside
# /var/lib/tokenproxy (the state volume), so the container runs with a read-only root
# filesystem.
FROM debian:12.15-slim
COPY --from=build /out/tokenproxy.deb /tmp/tokenproxy.deb
# DL3008: as in the build stage.
# hadolint ignore=DL3008
RUN groupadd --system --gid 10001 tokenproxy \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/tokenproxy --no-create-home \
        --shell /usr/sbin/nologin tokenproxy \
    && install -d -o 10001 -g 10001 -m 0700 /var/lib/tokenproxy \
    && apt-get update \
    && apt-get install -y --no-install-recommends /tmp/tokenproxy.deb ca-certificates \
    && rm -rf /var/lib/apt/lists/* /tmp/tokenproxy.deb
COPY deploy/docker/healthcheck.sh /usr/local/lib/tokenproxy/healthcheck
# The token store is $XDG_STATE_HOME/tokenproxy/tokens.json; tokenproxy creates that directory
# (mode 0700) inside the volume, so the volume's own mode does not matter.
ENV XDG_STATE_HOME=/var/lib/tokenproxy
VOLUME ["/var/lib/tokenproxy"]
# Numeric, so that a runtime (Kubernetes' runAsNonRoot) can tell it is not root.
USER 10001:10001
EXPOSE 8080
# GET healthz over loopback with bash's /dev/tcp (the image has no HTTP client); set
# TOKENPROXY_HEALTH_ADDR and TOKENPROXY_HEALTH_PATH when the config moves the admin endpoints.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/bin/bash", "/usr/local/lib/tokenproxy/healthcheck"]
ENTRYPOINT ["/usr/bin/tokenproxy"]
CMD ["serve", "--config", "/etc/tokenproxy/proxy.json"]
