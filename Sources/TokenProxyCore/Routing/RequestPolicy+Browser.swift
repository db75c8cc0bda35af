extension RequestPolicy {
    /// The listener a request came in on, which fixes the proxy's own origin there: a browser
    /// origin is scheme, host and port (RFC 6454 §4), so another port of the same host is
    /// another origin.
    public enum Listener: Sendable, Equatable {
        /// A TCP listener on this port: its origin is `http://HOST:PORT` for an allowed HOST.
        case tcp(port: UInt16)
        /// A listener that no browser page can have as its origin (a Unix socket, or one not
        /// bound yet): no `Origin` or `Referer` is its own.
        case withoutOrigin

        /// The listener for `address` once bound (port 0 is not bound yet).
        public init(_ address: ListenAddress) {
            if case .inet(_, let port) = address, port != 0 {
                self = .tcp(port: port)
            } else {
                self = .withoutOrigin
            }
        }
    }

    /// Refuses browser requests that do not come from the proxy's own origin or from the user
    /// (`docs/http-behaviour.md`, "Browser requests"):
    /// - `Sec-Fetch-Site` (Fetch Metadata, set by the browser, never by a page) must be absent,
    ///   `none` (the user typed or bookmarked the URL) or `same-origin`; `same-site` is another
    ///   port of the same host, and `cross-site` another site.
    /// - `Origin` must be the listener's own origin (RFC 6454 §7): `http`, an allowed host, and
    ///   the listener's port; `null` never is.
    /// - A `Referer` that is an `http(s)` URL must be on that origin too: browsers without
    ///   Fetch Metadata send no `Origin` on GET.
    /// Each of these a browser sends once; a repeated one is refused.
    func checkBrowser(_ head: HTTPRequestHead, listener: Listener) -> ProxyError? {
        let sites = head.headers.values("Sec-Fetch-Site")
        if sites.count > 1 || sites.contains(where: { $0 != "none" && $0 != "same-origin" }) {
            return ProxyError(.crossSiteRequest, "browser requests from other origins are refused")
        }
        let origins = head.headers.values("Origin")
        if origins.count > 1 {
            return ProxyError(.crossSiteRequest, "more than one Origin header")
        }
        if let origin = origins.first, !self.isOwnOrigin(origin[...], head: head, listener: listener) {
            return ProxyError(.crossSiteRequest, "requests from origin '\(origin)' are refused")
        }
        let referers = head.headers.values("Referer")
        if referers.count > 1 {
            return ProxyError(.crossSiteRequest, "more than one Referer header")
        }
        if let referer = referers.first, let origin = Self.origin(ofURL: referer),
            !self.isOwnOrigin(origin, head: head, listener: listener)
        {
            return ProxyError(.crossSiteRequest, "requests referred from another origin are refused")
        }
        return nil
    }

    /// The `scheme://authority` of an `http` or `https` URL, or nil for anything else (a
    /// browser sends only those as a `Referer`).
    private static func origin(ofURL url: String) -> Substring? {
        let schemeLength: Int
        if url.utf8.count >= 7, url.prefix(7).equalsIgnoringASCIICase("http://") {
            schemeLength = 7
        } else if url.utf8.count >= 8, url.prefix(8).equalsIgnoringASCIICase("https://") {
            schemeLength = 8
        } else {
            return nil
        }
        let rest = url.dropFirst(schemeLength)
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        return url[..<end]
    }

    /// Whether the serialized origin `origin` is the listener's own: `http://` (the proxy
    /// speaks nothing else), an allowed host (with `allowed_hosts: ["*"]`, the request's own
    /// Host), and the listener's port (80 when the origin has none).
    private func isOwnOrigin(_ origin: Substring, head: HTTPRequestHead, listener: Listener) -> Bool {
        guard case .tcp(let listenerPort) = listener, origin.utf8.count > 7,
            origin.prefix(7).equalsIgnoringASCIICase("http://")
        else { return false }
        let authority = origin.dropFirst(7)
        guard
            !authority.contains(where: { $0 == "/" || $0 == "@" || $0 == "?" || $0 == "#" || $0 == " " })
        else { return false }
        let (host, portText) = HostName.normalize(String(authority))
        guard !host.isEmpty else { return false }
        let port: UInt16
        if let portText {
            guard (1...5).contains(portText.utf8.count), portText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let value = UInt16(portText)
            else { return false }
            port = value
        } else {
            port = 80
        }
        guard port == listenerPort else { return false }
        if self.allowsEveryHost {
            guard let requestHost = head.authority else { return false }
            return HostName.normalize(requestHost).host == host
        }
        return self.isAllowed(host: host, port: String(port))
    }
}
