import Foundation
import TokenProxyConfiguration

/// Picks the provider whose token answers git's request (`docs/guide/git.md`): the routes
/// whose upstream has git's `protocol` and `host` (with its port, the scheme's default port
/// counting as none), and, when git sends a `path` (`credential.useHttpPath`), whose upstream
/// path is a prefix of it at a segment boundary. Of those, the longest upstream path wins
/// when git sent a path and the shortest when it did not, then file order. Routes without a
/// provider never match.
///
/// git's attributes are compared literally, never re-read as parts of a URL: a `host` is
/// `name[:port]` or `[v6][:port]` and nothing else (no user-info, no percent-encoding, no
/// path), and a `path` with a dot segment or an encoded separator matches nothing. A string
/// that a URL parser would reduce to a route's host (`evil@good.example`, `%67ood.example`)
/// is not that host, so it gets no token (``GitHost``).
package struct GitCredentialMatcher: Sendable {
    /// One route's upstream, reduced to what git can compare.
    struct Candidate: Sendable, Equatable {
        var scheme: String
        /// Lowercased host, `:port` appended when not the scheme's default.
        var authority: String
        /// Path segments of the upstream's path.
        var segments: [Substring]
        var provider: String
    }

    let candidates: [Candidate]

    /// Reads the routes' upstreams; an upstream that does not parse is left out.
    package init(routes: [RouteConfiguration]) {
        self.candidates = routes.compactMap { route in
            guard let provider = route.provider, let components = URLComponents(string: route.upstream),
                let scheme = components.scheme?.lowercased(), let host = components.host, !host.isEmpty
            else { return nil }
            return Candidate(
                scheme: scheme,
                authority: Self.authority(host: host, port: components.port, scheme: scheme),
                segments: components.path.split(separator: "/"),
                provider: provider
            )
        }
    }

    /// The provider for `request`, or nil when no route matches (git then asks its next helper).
    package func provider(for request: GitCredentialRequest) -> String? {
        guard let scheme = request.scheme?.lowercased(), let host = request.host,
            let authority = GitHost.authority(host, defaultPort: Self.defaultPort(scheme))
        else { return nil }
        var pathSegments: [Substring]?
        if let path = request.path {
            guard let segments = GitHost.pathSegments(path) else { return nil }
            pathSegments = segments
        }
        var best: Candidate?
        for candidate in self.candidates where candidate.scheme == scheme && candidate.authority == authority {
            if let pathSegments {
                guard pathSegments.starts(with: candidate.segments) else { continue }
            }
            let better: Bool
            if let best {
                // With a path the most specific route wins; without one, the host-wide one.
                better =
                    pathSegments == nil
                    ? candidate.segments.count < best.segments.count : candidate.segments.count > best.segments.count
            } else {
                better = true
            }
            if better {
                best = candidate
            }
        }
        return best?.provider
    }

    /// `host[:port]` lowercased, without the scheme's default port (RFC 3986 §6.2.3).
    static func authority(host: String, port: Int?, scheme: String) -> String {
        let name = host.lowercased()
        let bracketed = name.contains(":") && !name.hasPrefix("[") ? "[\(name)]" : name
        guard let port, port != defaultPort(scheme) else { return bracketed }
        return "\(bracketed):\(port)"
    }

    /// The default port of the schemes git speaks over HTTP.
    static func defaultPort(_ scheme: String) -> Int? {
        switch scheme {
        case "https": 443
        case "http": 80
        default: nil
        }
    }
}
