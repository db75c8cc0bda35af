/// The host of an absolute URL as it is written, without IDNA decoding or encoding.
///
/// Foundation's `URLComponents` gives the host only through IDNA processing, which
/// initialises ICU and loads its normalisation data in every process that reads a
/// configuration; the checks and the OAuth 1 signature need the host as written.
package enum URLHost {
    /// The host in `url`'s authority (`scheme://[userinfo@]host[:port]`), brackets kept for an
    /// IP literal; nil when `url` has no `://`.
    package static func written(in url: String) -> Substring? {
        guard let separator = url.range(of: "://") else { return nil }
        let authority = url[separator.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostAndPort = authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
        if hostAndPort.hasPrefix("[") {
            return hostAndPort.firstIndex(of: "]").map { hostAndPort[...$0] }
        }
        return hostAndPort.prefix { $0 != ":" }
    }
}
