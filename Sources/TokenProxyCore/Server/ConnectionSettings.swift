/// Settings a connection needs from the configuration.
public struct ConnectionSettings: Sendable {
    /// Parser size limits.
    public var parserLimits: HTTPParserLimits
    /// The total deadline for a request head (→ 408).
    public var headerTimeout: Double
    /// How long an idle keep-alive connection is kept; also the body inactivity deadline.
    public var idleTimeout: Double
    /// Bytes of response waiting for the client above which the connection reports itself
    /// not writable; it is writable again below a quarter of it. Tests make it small to reach
    /// the buffer's edges with small answers.
    var outputHighMark = 256 * 1024

    /// Creates settings; the defaults are those of `docs/configuration.md`, "Limits".
    public init(
        parserLimits: HTTPParserLimits = HTTPParserLimits(),
        headerTimeout: Double = 10,
        idleTimeout: Double = 60
    ) {
        self.parserLimits = parserLimits
        self.headerTimeout = headerTimeout
        self.idleTimeout = idleTimeout
    }
}
