import Logging
import TokenProxyConfiguration
import TokenProxyCredentials
import TokenProxyMetrics
import TokenProxySupport
import TokenProxyUpstream

/// Chooses the route for a request: the longest matching path prefix wins, matching whole
/// path segments only (`/gh` matches `/gh` and `/gh/x`, never `/ghost`); at equal length a
/// route naming the request's host beats one for any host; after that, config order.
package struct Router: Sendable {
    /// A matched route and the path to append to its upstream's base path.
    ///
    /// A small value, made per request without an object of its own: the route stays in the
    /// router's entry, which every match of it shares, so handing a match over copies three
    /// references, not the route's configuration.
    package struct Match: Sendable, Equatable {
        /// The matched route's entry, shared by every match of it: the route is not copied
        /// per request.
        private let entry: Entry
        // The entry's parts are yielded where they lie (`_read`) rather than returned: a
        // caller that reads one field of them copies that field, not the whole value.

        /// The matched route.
        var route: RouteConfiguration {
            _read { yield self.entry.route }
        }
        /// The route's upstream base, parsed once when the router was built.
        var base: Result<UpstreamURL.Base, UpstreamURL.Failure> {
            _read { yield self.entry.base }
        }
        /// The route's connection settings when they are fixed, made once when the router was
        /// built (``RouteConfiguration/fixedConnection``).
        var fixedConnection: CurlRequestSetup.Connection? { self.entry.fixedConnection }
        /// The route's logger, metrics series and provider, resolved once when the router was
        /// built; nil for a router built without them.
        var services: RouteServices? {
            _read { yield self.entry.services }
        }
        /// The request path with the prefix removed when `strip_prefix` is set (possibly
        /// empty), else the whole path.
        let upstreamPath: String
        /// Header fields that belong to the proxy itself (the `require_header` secret) and are
        /// removed from the forwarded request, in any letter case and every occurrence.
        let withheldHeaders: [String]

        /// A match of `route` forwarding to `upstreamPath`.
        init(route: RouteConfiguration, upstreamPath: String, withheldHeaders: [String] = []) {
            self.init(
                entry: Entry(route: route, prefix: "", host: nil, services: nil),
                upstreamPath: upstreamPath,
                withheldHeaders: withheldHeaders
            )
        }

        fileprivate init(entry: Entry, upstreamPath: String, withheldHeaders: [String]) {
            self.entry = entry
            self.upstreamPath = upstreamPath
            self.withheldHeaders = withheldHeaders
        }

        /// libcurl's settings for the matched route's upstream
        /// (``RouteConfiguration/upstreamOptions(limits:provider:fixed:idleTimeout:resendable:freshConnection:)``),
        /// with the route's fixed connection settings. Made from the route where the router
        /// keeps it: a call on the route read through ``route`` had it copied whole.
        func upstreamOptions(
            limits: Limits,
            provider: ProviderConfiguration?,
            idleTimeout: Double? = nil,
            resendable: Bool = true,
            freshConnection: Bool = false
        ) -> Result<CurlRequestSetup.Options, ProxyError> {
            self.entry.route.upstreamOptions(
                limits: limits,
                provider: provider,
                fixed: self.entry.fixedConnection,
                idleTimeout: idleTimeout,
                resendable: resendable,
                freshConnection: freshConnection
            )
        }

        /// Matches are equal when they name the same route, path and withheld fields.
        package static func == (lhs: Match, rhs: Match) -> Bool {
            lhs.route == rhs.route && lhs.upstreamPath == rhs.upstreamPath
                && lhs.withheldHeaders == rhs.withheldHeaders
        }
    }

    /// A route with its prefix and host made ready for matching. A class, so that looking
    /// through the routes for a request takes a reference to each rather than a copy of its
    /// whole configuration.
    fileprivate final class Entry: Sendable {
        let route: RouteConfiguration
        /// The prefix without a trailing slash; empty for the root prefix `/`.
        let prefix: String
        let host: String?
        /// The upstream's base, or why it is not a usable one.
        let base: Result<UpstreamURL.Base, UpstreamURL.Failure>
        let fixedConnection: CurlRequestSetup.Connection?
        let services: RouteServices?

        init(route: RouteConfiguration, prefix: String, host: String?, services: RouteServices?) {
            self.route = route
            self.prefix = prefix
            self.host = host
            self.base = Result { () throws(UpstreamURL.Failure) in try UpstreamURL.parseBase(route.upstream) }
            self.fixedConnection = route.fixedConnection
            self.services = services
        }
    }

    private let entries: [Entry]
    private let withheldHeaders: [String]
    /// Whether any route is for a particular host (else the request's host is not looked at).
    private let matchesHosts: Bool

    /// Builds the lookup order from routes in config order; `withheldHeaders` are the proxy's
    /// own fields, never forwarded on any route; `services` gives each route's logger and
    /// metrics series, kept with it for its requests.
    init(
        routes: [RouteConfiguration],
        withheldHeaders: [String] = [],
        services: (RouteConfiguration) -> RouteServices? = { _ in nil }
    ) {
        self.withheldHeaders = withheldHeaders
        let entries = routes.enumerated().map { index, route -> (Int, Entry) in
            var prefix = route.pathPrefix
            while prefix.hasSuffix("/") {
                prefix.removeLast()
            }
            let host = route.host.map { HostName.normalize($0).host }
            return (index, Entry(route: route, prefix: prefix, host: host, services: services(route)))
        }
        self.entries = entries.sorted { a, b in
            if a.1.prefix.utf8.count != b.1.prefix.utf8.count {
                return a.1.prefix.utf8.count > b.1.prefix.utf8.count
            }
            if (a.1.host != nil) != (b.1.host != nil) {
                return a.1.host != nil
            }
            return a.0 < b.0
        }.map(\.1)
        self.matchesHosts = self.entries.contains { $0.host != nil }
    }

    /// The route for `path` (the raw path of the request target) addressed to `authority`
    /// (the Host value or absolute-form authority, port allowed), or nil.
    func match(authority: String?, path: String) -> Match? {
        let requestHost = self.matchesHosts ? authority.map { HostName.normalize($0).host } : nil
        for entry in self.entries {
            if let host = entry.host, host != requestHost {
                continue
            }
            guard Self.path(path, hasSegmentPrefix: entry.prefix) else { continue }
            let upstreamPath =
                entry.route.stripPrefix ? String(path.utf8.dropFirst(entry.prefix.utf8.count)) ?? "" : path
            return Match(entry: entry, upstreamPath: upstreamPath, withheldHeaders: self.withheldHeaders)
        }
        return nil
    }

    /// Whether `prefix` (without a trailing slash) is `path` or a whole-segment prefix of it.
    static func path(_ path: String, hasSegmentPrefix prefix: String) -> Bool {
        // Compared as bytes where the strings keep them (every native string): a generic
        // comparison of the two UTF-8 views takes about a hundred and fifty instructions.
        let compared = path.utf8.withContiguousStorageIfAvailable { path in
            prefix.utf8.withContiguousStorageIfAvailable { prefix in
                Self.bytes(path, haveSegmentPrefix: prefix)
            }
        }
        if case .some(.some(let result)) = compared {
            return result
        }
        guard path.utf8.starts(with: prefix.utf8) else { return false }
        let rest = path.utf8.dropFirst(prefix.utf8.count)
        return rest.isEmpty || rest.first == UInt8(ascii: "/")
    }

    private static func bytes(
        _ path: UnsafeBufferPointer<UInt8>,
        haveSegmentPrefix prefix: UnsafeBufferPointer<UInt8>
    ) -> Bool {
        guard path.count >= prefix.count, UnsafeBufferPointer(rebasing: path[..<prefix.count]).elementsEqual(prefix)
        else {
            return false
        }
        return path.count == prefix.count || path[prefix.count] == UInt8(ascii: "/")
    }
}

/// What every request of one route reports to, resolved once per configuration rather than
/// looked up by the route's name per request.
struct RouteServices: Sendable {
    /// The handler's logger with the route's name attached.
    let logger: Logger
    /// Where the route's requests are reported: its access line and its series of the
    /// request metrics.
    let report: AccessReport
    /// The route's provider as the credential registry held it when the configuration was
    /// loaded (the registry is reloaded before the routes): nil for a route without one, or
    /// one the registry did not know, which the forwarder then looks up by name.
    var provider: CredentialRegistry.Entry? = nil
}
