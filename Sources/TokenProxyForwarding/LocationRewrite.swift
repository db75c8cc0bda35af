import TokenProxyUpstream

/// How a `Location` from an upstream maps back onto the proxy.
enum LocationRewrite {
    /// A `Location` pointing into the route's upstream (same origin, under its base path)
    /// becomes the matching path on the proxy, so the client's next request goes through the
    /// proxy again; any other location passes unchanged (it is not followed either way).
    static func rewrite(_ location: String, match: Router.Match, base: UpstreamURL.Base) -> String {
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
