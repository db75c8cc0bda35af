import TokenProxyHTTP

/// Settings a connection needs from the configuration.
package struct ConnectionSettings: Sendable {
    /// Parser size limits.
    package var parserLimits: HTTPParserLimits
    /// The total deadline for a request head (→ 408).
    package var headerTimeout: Double
    /// How long an idle keep-alive connection is kept; also the body inactivity deadline.
    package var idleTimeout: Double
    /// How long an upgraded connection may carry no byte either way.
    package var tunnelIdleTimeout: Double
    /// Bytes of response waiting for the client above which the connection reports itself
    /// not writable; it is writable again below a quarter of it. Tests make it small to reach
    /// the buffer's edges with small answers.
    var outputHighMark = 256 * 1024

    /// Creates settings; the defaults are those of `docs/reference/configuration.md`, "Limits".
    package init(
        parserLimits: HTTPParserLimits = HTTPParserLimits(),
        headerTimeout: Double = 10,
        idleTimeout: Double = 60,
        tunnelIdleTimeout: Double = 300
    ) {
        self.parserLimits = parserLimits
        self.headerTimeout = headerTimeout
        self.idleTimeout = idleTimeout
        self.tunnelIdleTimeout = tunnelIdleTimeout
    }
}
