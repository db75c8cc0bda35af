/// Assembles the upstream's response head from the header lines libcurl hands over, and
/// turns it into the head sent to the client: hop-by-hop fields removed, the length kept,
/// and a `Location` on the upstream's own origin rewritten to the proxy's path
/// (SPEC "Behaviour" 3 and 4). Pure: no I/O.
struct UpstreamResponseParser: Sendable {
    /// Fields never relayed to the client (RFC 9110 §7.6.1), plus the framing the client
    /// connection recomputes.
    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te",
        "trailer", "transfer-encoding", "upgrade", "content-length",
    ]

    private var status: Int?
    private var reason: String?
    private var fields: [(String, String)] = []
    private(set) var headComplete = false

    /// What a line changed.
    enum LineResult: Equatable {
        /// More lines are needed.
        case pending
        /// An interim (1xx) head ended and was dropped.
        case interim
        /// The final head is complete: read it with ``head(request:route:base:)``.
        case complete
        /// The line is not valid HTTP.
        case invalid
    }

    /// Feeds one header line, CRLF included or not.
    mutating func line(_ raw: String) -> LineResult {
        // Work on bytes: to String, "\r\n" is one Character and would not match "\n".
        var bytes = Substring(raw).utf8[...]
        while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") {
            bytes = bytes.dropLast()
        }
        let line = Substring(bytes)
        if line.hasPrefix("HTTP/") {
            // A new status line: an interim head before this one is forgotten.
            let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            guard parts.count >= 2, let status = Int(parts[1]), (100...599).contains(status) else { return .invalid }
            self.status = status
            self.reason = parts.count == 3 ? String(parts[2]) : nil
            self.fields = []
            return .pending
        }
        guard let status = self.status else { return .invalid }
        if line.isEmpty {
            if (100..<200).contains(status) {
                self.status = nil
                self.fields = []
                return .interim
            }
            self.headComplete = true
            return .complete
        }
        if line.first == " " || line.first == "\t" {
            // obs-fold from an old upstream: join it to the previous value (RFC 9112 §5.2).
            guard !self.fields.isEmpty else { return .invalid }
            self.fields[self.fields.count - 1].1 += " " + line.trimmingHTTPWhitespace()
            return .pending
        }
        guard let colon = line.firstIndex(of: ":") else { return .invalid }
        let name = String(line[..<colon])
        guard HTTPGrammar.isToken(name) else { return .invalid }
        self.fields.append((name, line[line.index(after: colon)...].trimmingHTTPWhitespace()))
        return .pending
    }

    /// The head to send to the client.
    func head(requestIsHead: Bool, match: Router.Match, base: UpstreamURL.Base) -> HTTPResponseHead {
        let status = self.status ?? 502
        var headers = HTTPHeaders()
        let connectionNamed = Set(
            self.fields.filter { $0.0.equalsIgnoringASCIICase("connection") }
                .flatMap { $0.1.split(separator: ",").map { $0.trimmingHTTPWhitespace().lowercased() } }
        )
        var contentLength: Int64?
        for (name, value) in self.fields {
            let lowered = name.lowercased()
            if lowered == "content-length" {
                contentLength = Int64(value)
            }
            guard !Self.hopByHop.contains(lowered), !connectionNamed.contains(lowered),
                HTTPGrammar.isValidFieldValue(value.utf8)
            else { continue }
            if lowered == "location" {
                headers.add(name: name, value: Self.rewriteLocation(value, match: match, base: base))
            } else {
                headers.add(name: name, value: value)
            }
        }
        var head = HTTPResponseHead(status: status, reason: self.reason, headers: headers)
        if requestIsHead || !head.forbidsBody {
            head.contentLength = contentLength
        }
        return head
    }

    /// A `Location` pointing into the route's upstream (same origin, under its base path)
    /// becomes the matching path on the proxy, so the client's next request goes through the
    /// proxy again; any other location passes unchanged (it is not followed either way).
    static func rewriteLocation(_ location: String, match: Router.Match, base: UpstreamURL.Base) -> String {
        let origin = base.origin
        guard location.lowercased().hasPrefix(origin.lowercased()) else { return location }
        var rest = String(location.dropFirst(origin.count))
        if rest.hasPrefix(":") {
            // An explicit default port: `https://host:443/x`.
            let defaultPort = base.scheme == "https" ? ":443" : ":80"
            guard rest.hasPrefix(defaultPort) else { return location }
            rest = String(rest.dropFirst(defaultPort.count))
        }
        guard rest.isEmpty || rest.hasPrefix("/") || rest.hasPrefix("?") || rest.hasPrefix("#") else {
            return location
        }
        let path = rest.prefix { $0 != "?" && $0 != "#" }
        let suffix = rest.dropFirst(path.count)
        guard Router.path(String(path), hasSegmentPrefix: base.path) else { return location }
        let remainder = path.dropFirst(base.path.count)
        let prefix = match.route.pathPrefix == "/" ? "" : match.route.pathPrefix
        let proxyPath: String
        if match.route.stripPrefix {
            proxyPath = prefix + remainder
        } else {
            proxyPath = String(remainder)
        }
        return (proxyPath.isEmpty ? "/" : proxyPath) + suffix
    }
}
