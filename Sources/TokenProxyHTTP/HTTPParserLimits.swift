/// The size limits the request parser enforces (`docs/reference/configuration.md`, "Limits").
package struct HTTPParserLimits: Sendable, Equatable {
    /// Longest request line, CRLF excluded (→ 414).
    package var maxRequestLineBytes: Int
    /// Largest header section, field lines and their CRLFs (→ 431). Trailers get the same budget.
    package var maxHeaderBytes: Int
    /// Most header fields (→ 431).
    package var maxHeaderCount: Int
    /// Most chunk-extension bytes over one request body (→ 400).
    package var maxChunkExtensionBytes: Int

    /// Creates limits; the defaults are those of `docs/reference/configuration.md`, "Limits".
    package init(
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
