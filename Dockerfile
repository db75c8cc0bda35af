# Build stage: the Swift toolchain image with libcurl's headers.
FROM swift:6.1-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends libcurl4-openssl-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
# Linked by the toolchain's lld with packed relative relocations (DT_RELR, glibc 2.36+): the
# static Swift runtime carries about 88,000 relative relocations, which otherwise fill a 2 MiB
# table that every start reads in; packed, they take 16 KiB (docs/performance.md).
RUN swift build -c release --static-swift-stdlib --product tokenproxy \
        -Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld -Xlinker -z -Xlinker pack-relative-relocs \
    && install -D "$(swift build -c release --show-bin-path)/tokenproxy" /out/tokenproxy

# Runtime stage: libcurl, CA certificates and an unprivileged user; nothing else.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends libcurl4 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /var/lib/tokenproxy --create-home tokenproxy
COPY --from=build /out/tokenproxy /usr/local/bin/tokenproxy
USER tokenproxy
ENV XDG_STATE_HOME=/var/lib/tokenproxy
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/tokenproxy"]
CMD ["serve", "--config", "/etc/tokenproxy/proxy.json"]
