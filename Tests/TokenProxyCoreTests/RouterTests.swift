import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyForwarding

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
}
