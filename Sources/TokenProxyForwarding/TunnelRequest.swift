import Synchronization
import TokenProxyConfiguration
import TokenProxyCredentials
import TokenProxyHTTP
import TokenProxySupport
import TokenProxyUpstream

/// An upgrade request (RFC 9110 §7.8) and what the route lets through: which of the offered
/// protocols are allowed, and the head that goes upstream (`docs/guide/websocket.md`).
struct TunnelRequest {
    /// What the client's request asks for.
    enum Kind: Equatable {
        /// An ordinary request: no upgrade, an HTTP/1.0 one (which RFC 9110 §7.8 says to
        /// ignore), or `h2c` alone (HTTP/2 over the same connection is the proxy's hop, not
        /// the upstream's: the request is served as HTTP/1.1).
        case ordinary
        /// An upgrade to `protocols`, the offered ones the route allows, in the client's order.
        case upgrade(protocols: [String])
        /// Refused: 400 `upgrade_not_allowed` (or `bad_request` for an upgrade with a body).
        case refused(ProxyError)
    }

    /// What `head` asks for along `match`'s route. (The match, not the route, is passed: the
    /// route read from it for an argument was copied whole.)
    static func kind(of head: HTTPRequestHead, along match: Router.Match) -> Kind {
        // Every request comes through here: one field lookup, no allocation, for the many
        // that ask for no upgrade.
        guard head.headers.contains("Upgrade") else { return .ordinary }
        let connection = head.headers.tokens("Connection")
        guard connection.contains(where: { $0.equalsIgnoringASCIICase("upgrade") }), head.version != .http1_0 else {
            return .ordinary
        }
        let offered = head.headers.tokens("Upgrade")
        guard !offered.isEmpty, !offered.allSatisfy({ $0.equalsIgnoringASCIICase("h2c") }) else { return .ordinary }
        if head.framing != .none && head.framing != .contentLength(0) {
            return .refused(ProxyError(.badRequest, "an upgrade request cannot carry a body", route: match.route.name))
        }
        let allowed = offered.filter { token in
            let name = token.split(separator: "/", maxSplits: 1).first.map(String.init) ?? token
            return match.route.upgradeProtocols.contains {
                $0.equalsIgnoringASCIICase(name) || $0.equalsIgnoringASCIICase(token)
            }
        }
        guard !allowed.isEmpty else {
            return .refused(
                ProxyError(
                    .upgradeNotAllowed,
                    "this route does not pass through an upgrade to \(offered.joined(separator: ", "))",
                    route: match.route.name
                )
            )
        }
        return .upgrade(protocols: allowed)
    }

    /// The request head sent upstream: the request as any other is built (hop-by-hop fields
    /// removed, `X-Forwarded-*`, the route's edits, the credential), with `Host`, the
    /// allowed `Upgrade` protocols and `Connection: Upgrade` set again for this hop.
    static func head(
        _ request: UpstreamRequest,
        base: UpstreamURL.Base,
        protocols: [String]
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(1024)
        let target = request.url.utf8.dropFirst(base.origin.utf8.count)
        bytes += request.method.utf8
        bytes.append(UInt8(ascii: " "))
        bytes += target.isEmpty ? Array("/".utf8) : Array(target)
        bytes += " HTTP/1.1\r\n".utf8
        if !request.headers.contains("Host") {
            let authority = base.origin.utf8.dropFirst(base.scheme.utf8.count + 3)
            bytes += "Host: ".utf8
            bytes += authority
            bytes += "\r\n".utf8
        }
        request.headers.forEachField { name, value in
            // Checked by the parser already; checked again where a CR or LF would split the head.
            guard HTTPGrammar.isToken(name), HTTPGrammar.isValidFieldValue(value) else { return }
            bytes += name
            bytes += ": ".utf8
            bytes += value
            bytes += "\r\n".utf8
        }
        bytes += "Upgrade: \(protocols.joined(separator: ", "))\r\nConnection: Upgrade\r\n\r\n".utf8
        return bytes
    }
}

/// The count of open tunnels (handshakes included) against `limits.max_tunnels`.
final class TunnelSlots: Sendable {
    private let open = Atomic<Int>(0)
    /// The limit.
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// Takes a slot; false when all are taken.
    func take() -> Bool {
        while true {
            let current = self.open.load(ordering: .relaxed)
            guard current < self.limit else { return false }
            if self.open.compareExchange(expected: current, desired: current + 1, ordering: .relaxed).exchanged {
                return true
            }
        }
    }

    /// Gives a slot back.
    func release() {
        self.open.subtract(1, ordering: .relaxed)
    }
}
