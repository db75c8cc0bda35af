import Foundation
import TokenProxyConfiguration
import TokenProxyHTTP
import TokenProxyServer
import TokenProxySupport

extension RequestPolicy {
    /// The listener a request came in on, which fixes the proxy's own origin there: a browser
    /// origin is scheme, host and port (RFC 6454 §4), so another port of the same host is
    /// another origin.
    package enum Listener: Sendable, Equatable {
        /// A TCP listener bound to `host` (an IP literal without brackets, or a name) and
        /// `port`: its origin is `http://HOST:PORT` for an allowed HOST that can reach it.
        case tcp(host: String, port: UInt16)
        /// A listener that no browser page can have as its origin (a Unix socket, or one not
        /// bound yet): no `Origin` or `Referer` is its own.
        case withoutOrigin

        /// The listener for `address` once bound (port 0 is not bound yet).
        package init(_ address: ListenAddress) {
            if case .inet(let host, let port) = address, port != 0 {
                self = .tcp(host: host, port: port)
            } else {
                self = .withoutOrigin
            }
        }
    }

    /// Refuses browser requests that do not come from the proxy's own origin or from the user
    /// (`docs/reference/http-behaviour.md`, "Browser requests"):
    /// - `Sec-Fetch-Site` (Fetch Metadata, set by the browser, never by a page) must be absent,
    ///   `none` (the user typed or bookmarked the URL) or `same-origin`; `same-site` is another
    ///   port of the same host, and `cross-site` another site.
    /// - `Origin` must be the listener's own origin (RFC 6454 §7): `http`, an allowed host, and
    ///   the listener's port; `null` never is.
    /// - A `Referer` that is an `http(s)` URL must be on that origin too: browsers without
    ///   Fetch Metadata send no `Origin` on GET.
    /// Each of these a browser sends once; a repeated one is refused.
    func checkBrowser(_ head: HTTPRequestHead, listener: Listener) -> ProxyError? {
        // Most requests come from programs and carry none of the three fields a browser
        // sends: a pass that only looks for them spares those requests the lists below.
        var fromBrowser = false
        head.headers.forEachField { name, _ in
            fromBrowser =
                fromBrowser || HTTPHeaders.name(name, is: "sec-fetch-site") || HTTPHeaders.name(name, is: "origin")
                || HTTPHeaders.name(name, is: "referer")
        }
        guard fromBrowser else { return nil }
        // One pass over the fields for the three a browser sends.
        var sites: [String] = []
        var origins: [String] = []
        var referers: [String] = []
        head.headers.forEachField { name, value in
            if HTTPHeaders.name(name, is: "sec-fetch-site") {
                sites.append(String(decoding: value, as: UTF8.self))
            } else if HTTPHeaders.name(name, is: "origin") {
                origins.append(String(decoding: value, as: UTF8.self))
            } else if HTTPHeaders.name(name, is: "referer") {
                referers.append(String(decoding: value, as: UTF8.self))
            }
        }
        if sites.count > 1 || sites.contains(where: { $0 != "none" && $0 != "same-origin" }) {
            return ProxyError(.crossSiteRequest, "browser requests from other origins are refused")
        }
        if origins.count > 1 {
            return ProxyError(.crossSiteRequest, "more than one Origin header")
        }
        if let origin = origins.first, !self.isOwnOrigin(origin[...], head: head, listener: listener) {
            return ProxyError(.crossSiteRequest, "requests from origin '\(origin)' are refused")
        }
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
    /// Host) that can reach the listener, and the listener's port (80 when the origin has none).
    private func isOwnOrigin(_ origin: Substring, head: HTTPRequestHead, listener: Listener) -> Bool {
        guard case .tcp(let listenerHost, let listenerPort) = listener, origin.utf8.count > 7,
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
        guard port == listenerPort, Self.address(host, canReach: listenerHost) else { return false }
        if self.allowsEveryHost {
            guard let requestHost = head.authority else { return false }
            return HostName.normalize(requestHost).host == host
        }
        return self.isAllowed(host: host, port: String(port))
    }

    /// Whether an origin whose host is `host` can be served by a listener bound to
    /// `listenerHost`. An IP literal names one address: `http://[::1]:8080` is whatever
    /// listens on `[::1]:8080`, not a listener bound to `127.0.0.1:8080`. A name (`localhost`)
    /// may resolve to either, so it is left to the allowed hosts.
    private static func address(_ host: String, canReach listenerHost: String) -> Bool {
        guard let address = IPAddress(host), let listener = IPAddress(listenerHost) else { return true }
        switch listener {
        case .v4(let bytes) where bytes == [0, 0, 0, 0]:
            if case .v4 = address { return true }
            return false
        case .v6(let bytes) where bytes.allSatisfy({ $0 == 0 }):
            // A dual-stack wildcard takes IPv4 connections too.
            return true
        default:
            return address == listener
        }
    }
}

/// An IPv4 or IPv6 address parsed from its literal form (`inet_pton`), for comparing
/// literals written differently (`::1`, `0:0:0:0:0:0:0:1`).
private enum IPAddress: Equatable {
    case v4([UInt8])
    case v6([UInt8])

    init?(_ literal: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 {
            self = .v4(withUnsafeBytes(of: &v4) { Array($0) })
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, literal, &v6) == 1 {
            self = .v6(withUnsafeBytes(of: &v6) { Array($0) })
            return
        }
        return nil
    }
}
