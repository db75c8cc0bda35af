import TokenProxyConfiguration
import TokenProxyHTTP

extension ConnectionSettings {
    /// The settings the configuration's `limits` give every client connection: the parser's
    /// bounds on a head and the header and keep-alive idle deadlines
    /// (`docs/reference/configuration.md`, "Limits").
    package init(limits: Limits) {
        self.init(
            parserLimits: HTTPParserLimits(
                maxRequestLineBytes: limits.maxRequestLineBytes,
                maxHeaderBytes: limits.maxHeaderBytes,
                maxHeaderCount: limits.maxHeaderCount,
                maxChunkExtensionBytes: limits.maxChunkExtensionBytes
            ),
            headerTimeout: limits.headerTimeoutSeconds,
            idleTimeout: limits.idleTimeoutSeconds,
            tunnelIdleTimeout: limits.tunnelIdleSeconds
        )
    }
}
