import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyForwarding
@testable import TokenProxyUpstream

private func route(_ prefix: String, host: String? = nil, name: String? = nil, strip: Bool = true) -> RouteConfiguration
{
    let json = """
        {"providers": {}, "routes": [{"name": "\(name ?? prefix)", "path_prefix": "\(prefix)", \
        "upstream": "https://up.example/base"\(host.map { #", "host": "\#($0)""# } ?? ""), "strip_prefix": \(strip)}]}
        """
    return TestProxy.configuration(json).routes[0]
}

struct RouterTests {
    @Test func matchingIsSegmentAware() {
        let router = Router(routes: [route("/gh")])
        #expect(router.match(authority: "localhost", path: "/gh")?.upstreamPath == "")
        #expect(router.match(authority: "localhost", path: "/gh/")?.upstreamPath == "/")
        #expect(router.match(authority: "localhost", path: "/gh/repos/x")?.upstreamPath == "/repos/x")
        #expect(router.match(authority: "localhost", path: "/ghost") == nil)
        #expect(router.match(authority: "localhost", path: "/g") == nil)
    }

    @Test func longestPrefixWinsWhateverTheOrder() {
        let router = Router(routes: [
            route("/", name: "root"), route("/api", name: "api"), route("/api/v2", name: "v2"),
        ])
        #expect(router.match(authority: nil, path: "/api/v2/x")?.route.name == "v2")
        #expect(router.match(authority: nil, path: "/api/v20")?.route.name == "api")
        #expect(router.match(authority: nil, path: "/other")?.route.name == "root")
        #expect(router.match(authority: nil, path: "/other")?.upstreamPath == "/other")
    }

    @Test func hostSpecificRoutesWinAtEqualLength() {
        let router = Router(routes: [route("/api", name: "any"), route("/api", host: "a.localhost", name: "a")])
        #expect(router.match(authority: "A.LOCALHOST:8080", path: "/api/x")?.route.name == "a")
        #expect(router.match(authority: "localhost", path: "/api/x")?.route.name == "any")
    }

    @Test func hostRoutesDoNotMatchOtherHosts() {
        let router = Router(routes: [route("/api", host: "a.localhost")])
        #expect(router.match(authority: "b.localhost", path: "/api") == nil)
        #expect(router.match(authority: nil, path: "/api") == nil)
    }

    @Test func withoutStripPrefixTheWholePathIsKept() {
        let router = Router(routes: [route("/v1", strip: false)])
        #expect(router.match(authority: nil, path: "/v1/users")?.upstreamPath == "/v1/users")
    }

    @Test func hostNamesNormalize() {
        #expect(HostName.normalize("LocalHost.:8080") == ("localhost", "8080"))
        #expect(HostName.normalize("[::1]:9") == ("::1", "9"))
        #expect(HostName.normalize("[::1]") == ("::1", nil))
        #expect(HostName.normalize("127.0.0.1") == ("127.0.0.1", nil))
        #expect(HostName.normalize("Example.COM") == ("example.com", nil))
        #expect(HostName.normalize("host:") == ("host", ""))
        // Bare IPv6 (several colons) has no port; an unclosed bracket is kept as it is.
        #expect(HostName.normalize("::1") == ("::1", nil))
        #expect(HostName.normalize("[::1") == ("[::1", nil))
        #expect(HostName.normalize("") == ("", nil))
        #expect(HostName.normalize(".") == ("", nil))
    }

    /// A route that reads nothing per request shares the connection settings the router made
    /// for it; one with a `client_key`, or one that takes its provider's certificate, has them
    /// made per request. Either way the settings are those made from the route's own fields.
    @Test func fixedConnectionSettingsAreSharedOnlyWhenNothingIsReadPerRequest() throws {
        var certifying = ProviderConfiguration(name: "p", grant: .clientCredentials)
        certifying.clientCert = .file("/provider.pem")
        let cases: [(route: RouteConfiguration, provider: ProviderConfiguration?, shared: Bool)] = [
            (RouteConfiguration(pathPrefix: "/a", upstream: "http://up.example"), nil, true),
            (RouteConfiguration(pathPrefix: "/b", upstream: "https://up.example", provider: "p"), nil, true),
            (
                RouteConfiguration(
                    pathPrefix: "/c",
                    upstream: "http://up.example",
                    provider: "p",
                    allowInsecureUpstream: true,
                    caFile: "/ca.pem",
                    clientCert: "/cert-and-key.pem"
                ), certifying, true
            ),
            (
                RouteConfiguration(
                    pathPrefix: "/d",
                    upstream: "https://up.example",
                    clientCert: "/cert.pem",
                    clientKey: .literal("KEY")
                ), nil, false
            ),
            (RouteConfiguration(pathPrefix: "/e", upstream: "https://up.example", provider: "p"), certifying, false),
        ]
        for (route, provider, shared) in cases {
            let match = try #require(Router(routes: [route]).match(authority: nil, path: route.pathPrefix))
            #expect((match.fixedConnection != nil) == (route.clientKey == nil), "\(route.name)")
            let fixed = route.upstreamOptions(limits: Limits(), provider: provider, fixed: match.fixedConnection)
            let made = route.upstreamOptions(limits: Limits(), provider: provider, fixed: nil)
            guard case .success(let fixedOptions) = fixed, case .success(let madeOptions) = made else {
                // Only the provider's certificate, which does not exist here, fails to be read,
                // and both ways read it: the shared settings must not stand in for it.
                #expect(!shared && provider != nil, "\(route.name)")
                if case .success = fixed { Issue.record("\(route.name): the shared settings were used") }
                if case .success = made { Issue.record("\(route.name): the provider's certificate was not read") }
                continue
            }
            #expect((fixedOptions.connection === match.fixedConnection) == shared, "\(route.name)")
            let a = fixedOptions.connection
            let b = madeOptions.connection
            #expect(a.allowPlainHTTP == b.allowPlainHTTP && a.caFile == b.caFile, "\(route.name)")
            #expect(a.clientCertificate == b.clientCertificate && a.clientKeyPEM == b.clientKeyPEM, "\(route.name)")
            #expect(a.clientCertificatePEM == b.clientCertificatePEM, "\(route.name)")
            #expect(fixedOptions.firstByteTimeout == madeOptions.firstByteTimeout)
        }
    }

    /// The segment-prefix rule on its own, for every shape of path against prefix: equal,
    /// longer by a segment, longer within a segment, shorter, empty prefix, multi-byte UTF-8
    /// (whose bytes are compared, not characters), and strings long enough to live on the heap.
    @Test(arguments: [
        ("/gh", "/gh", true),
        ("/gh/x", "/gh", true),
        ("/ghost", "/gh", false),
        ("/g", "/gh", false),
        ("", "/gh", false),
        ("/anything", "", true),
        ("", "", true),
        ("/caf\u{E9}/menu", "/caf\u{E9}", true),
        ("/cafe\u{301}/menu", "/caf\u{E9}", false),
        ("/a-long-prefix-beyond-fifteen-bytes/and/more", "/a-long-prefix-beyond-fifteen-bytes", true),
        ("/a-long-prefix-beyond-fifteen-bytesX", "/a-long-prefix-beyond-fifteen-bytes", false),
    ])
    func segmentPrefixes(path: String, prefix: String, matches: Bool) {
        #expect(Router.path(path, hasSegmentPrefix: prefix) == matches)
    }
}
