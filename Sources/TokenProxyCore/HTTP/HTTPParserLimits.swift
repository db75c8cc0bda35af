/// The size limits the request parser enforces (`docs/configuration.md`, "Limits").
public struct HTTPParserLimits: Sendable, Equatable {
    /// Longest request line, CRLF excluded (→ 414).
    public var maxRequestLineBytes: Int
    /// Largest header section, field lines and their CRLFs (→ 431). Trailers get the same budget.
    public var maxHeaderBytes: Int
    /// Most header fields (→ 431).
    public var maxHeaderCount: Int
    /// Most chunk-extension bytes over one request body (→ 400).
    public var maxChunkExtensionBytes: Int

    /// Creates limits; the defaults are those of `docs/configuration.md`, "Limits".
    public init(
        maxRequestLineBytes: Int = 8192,
        maxHeaderBytes: Int = 65536,
        maxHeaderCount: Int = 100,
        maxChunkExtensionBytes: Int = 16384
    ) {
        self.maxRequestLineBytes = maxRequestLineBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxChunkExtensionBytes = maxChunkExtensionBytes
    }
}
