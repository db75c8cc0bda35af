import Foundation
import Testing

@testable import TokenProxyForwarding
@testable import TokenProxyUpstream

/// A path that tries to leave a route's base path, sent after the route's prefix.
private let escapes: [String] = [
    // Dot-segments, literal and encoded.
    "/..", "/../admin", "/./admin", "/x/../../projectB", "/%2e%2e/admin", "/.%2e/admin", "/%2e./admin", "/%2e/admin",
    "/x/%2e%2e", "/..%2e/admin", "/.../admin",
    // Encoded slashes and backslashes that make dot-segments once decoded.
    "/%2e%2e%2fadmin", "/..%2fadmin", "/.%2e%2fadmin", "/x%2f..%2f..%2fprojectB", "/x/..%2f..%2fv1/projectB",
    "/%2e%2e%2f%2e%2e%2fadmin", "/..%5cadmin", "/..\\admin", "/x\\..\\..\\projectB", "/%5c..%5cadmin",
    "/x%5c%2e%2e%5c%2e%2e%5cprojectB", "/.%5c", "/..%2f",
    // Double (and deeper) encoding.
    "/%252e%252e/admin", "/%252e%252e%252fadmin", "/x/%25252e%25252e/admin", "/..%252fadmin", "/..%255cadmin",
    "/%252%65%252%65/admin", "/a%2525252541", "/%" + String(repeating: "25", count: 2000) + "2e",
    // Path parameters (Tomcat, Spring, Jetty).
    "/..;/admin", "/..;jsessionid=x/admin", "/.;/admin", "/x/..;a=b/..;/v1/projectB", "/%2e%2e;/admin",
    "/..%3b/admin", "/..%3bjsessionid=x/admin", "/.%2e;x=%2f/admin", "/x;a=%2f..%2f../projectB",
    // Control characters once decoded.
    "/..%00/admin", "/%00", "/x%00.json", "/a%0d%0aX-Injected:%20yes", "/a%09b", "/a%7f", "/%2500",
    // Overlong and otherwise invalid UTF-8.
    "/%c0%ae%c0%ae/admin", "/%c0%af..%c0%afadmin", "/..%c0%afadmin", "/%e0%80%ae%e0%80%ae/admin",
    "/%f0%80%80%ae%f0%80%80%ae/admin", "/..%c1%9cadmin", "/%c0%2e%c0%2e/admin", "/..%ff", "/%25c0%25ae%25c0%25ae/",
    // Unicode compatibility forms of dots and solidi.
    "/%ef%bc%8e%ef%bc%8e/admin", "/..%ef%bc%8fadmin", "/..%ef%bc%bcadmin", "/%e2%80%a5/admin",
    "/%e2%80%a4%e2%80%a4/admin", "/%ef%b9%92%ef%b9%92/admin", "/..%c2%a0/admin", "/%e2%80%a6/admin",
    // Unicode white space, invisible characters and C1 controls around dots.
    "/..%e2%80%83/admin", "/..%e1%9a%80/admin", "/..%e2%80%a8/admin", "/..%e3%80%80/admin", "/..%e2%80%8b/admin",
    "/%ef%bb%bf../admin", "/.%e2%80%8d./admin", "/..%c2%85/admin", "/a%c2%9fb", "/%e2%80%8b%2e%2e%2fadmin",
    // Trailing spaces (Windows trims them).
    "/..%20/admin", "/%20../admin", "/.%20./admin",
    // Broken escapes never get past the parser.
    "/%u002e%u002e/admin", "/%%32%65%%32%65/admin",
]

/// Paths that pass unchanged: nothing in them can climb.
private let ordinary: [String] = [
    "", "/", "/items/7", "/a%20b", "/%41", "/a;b", "/a;b=c/d", "/~user", "/caf%C3%A9", "/%E6%97%A5%E6%9C%AC",
    "/.well-known/openid-configuration", "/a..b", "/..a", "/a.", "/file.tar.gz", "/a%3fb", "/a%23b", "/a%25b",
    "/100%2541", "/a%25252541", "/%e2%80%83", "/a%e2%80%8bb", "/%c2%a0x", "/v1/projectB", "/;x", "/%2e%2e%2e%41",
    "/x/.hidden", "/%e2%82%ac",
    // Encoded slashes alone only go deeper (GitLab's `projects/group%2Fproject`).
    "/projects/group%2Fproject", "/a%2Fb%2Fc", "/a%5cb", "/a\\b",
    // Empty segments: merged or kept, never an authority after the base path.
    "//evil.example/x", "/x//y", "/%2f%2fevil.example", "///",
]

/// Each path as written, with its escapes upper- and lowercased, and wholly uppercased.
private func letterCases(_ paths: [String]) -> [String] {
    var seen = Set<String>()
    var result: [String] = []
    for path in paths {
        for variant in [path, hexCased(path, upper: true), hexCased(path, upper: false), path.uppercased()]
        where seen.insert(variant).inserted {
            result.append(variant)
        }
    }
    return result
}

private func hexCased(_ path: String, upper: Bool) -> String {
    var out = ""
    var rest = Substring(path)
    while let percent = rest.firstIndex(of: "%") {
        out += rest[..<percent]
        let escape = rest[percent...].prefix(3)
        out += upper ? escape.uppercased() : escape.lowercased()
        rest = rest[percent...].dropFirst(escape.count)
    }
    return out + rest
}

/// Routes `/scoped` to `/v1/projectA` and `/kept` (prefix kept) to `/v1/projectC` on a fake
/// upstream, with a credential.
private final class BoundaryFixture {
    let upstream: FakeUpstream
    let proxy: TestProxy

    init() throws {
        self.upstream = try FakeUpstream()
        let origin = "http://127.0.0.1:\(self.upstream.port)"
        let json = """
            {"providers": {"svc": {"grant": "static", "token": "boundary-token"}},
             "routes": [
               {"path_prefix": "/scoped", "upstream": "\(origin)/v1/projectA", "provider": "svc",
                "allow_insecure_upstream": true},
               {"path_prefix": "/kept", "upstream": "\(origin)/v1/projectC", "provider": "svc",
                "allow_insecure_upstream": true, "strip_prefix": false}
             ]}
            """
        self.proxy = try TestProxy.forwarding(json)
    }

    func send(_ path: String) throws -> TestClient.Response {
        let client = try self.proxy.client()
        try client.send("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return try client.readResponse()
    }
}

struct BasePathBoundaryTests {
    @Test func everyEscapeIsRefusedOverASocket() throws {
        let fixture = try BoundaryFixture()
        for (prefix, base) in [("/scoped", ["v1", "projectA"]), ("/kept", ["v1", "projectC"])] {
            for suffix in letterCases(escapes) {
                let arrivedBefore = fixture.upstream.requests.count
                let response = try fixture.send(prefix + suffix)
                #expect(response.status == 400, "\(prefix + suffix)")
                #expect(response.header("X-Tokenproxy-Error") == "bad_request", "\(prefix + suffix)")
                // Whatever the answer, nothing that climbs out of the base may arrive upstream.
                for seen in fixture.upstream.requests.dropFirst(arrivedBefore) {
                    let path = String(seen.target.prefix { $0 != "?" })
                    #expect(WorstCaseNormaliser.staysUnder(base, path: path), "\(prefix + suffix) arrived as \(path)")
                }
            }
        }
        #expect(fixture.upstream.requests.map { String($0.target.prefix(80)) } == [])
    }

    @Test func ordinaryPathsArriveUnchangedUnderTheBase() throws {
        let fixture = try BoundaryFixture()
        for suffix in letterCases(ordinary) {
            let response = try fixture.send("/scoped" + suffix + "?q=%2e%2e%2f..;x")
            #expect(response.status == 200, "\(suffix)")
            let seen = "/v1/projectA" + suffix
            #expect(response.header("X-Seen-Target") == seen + "?q=%2e%2e%2f..;x", "\(suffix)")
            #expect(WorstCaseNormaliser.staysUnder(["v1", "projectA"], path: seen), "\(suffix)")
        }
        let response = try fixture.send("/kept/a;b/%41")
        #expect(response.header("X-Seen-Target") == "/v1/projectC/kept/a;b/%41")
    }

    @Test func pathOverrideFieldsNeverReachTheUpstream() throws {
        let fixture = try BoundaryFixture()
        let client = try fixture.proxy.client()
        try client.send(
            "GET /scoped/x HTTP/1.1\r\nHost: localhost\r\nX-Original-URL: /admin\r\nx-rewrite-url: /admin\r\n"
                + "X-ORIGINAL-URI: /admin\r\nX-Override-URL: /admin\r\nX-Forwarded-Prefix: /admin\r\n"
                + "X-Original-URL: /v1/projectB\r\nX-Kept: yes\r\n\r\n"
        )
        #expect(try client.readResponse().status == 200)
        let seen = try #require(fixture.upstream.requests.first)
        #expect(seen.target == "/v1/projectA/x")
        #expect(seen.headers.first("X-Kept") == "yes")
        #expect(!seen.headers.contains { $0.value.contains("/admin") || $0.value.contains("projectB") })
    }

    @Test func theRuleRefusesEveryEscapeAndPassesOrdinaryPaths() {
        for suffix in letterCases(escapes) {
            // `%u` escapes are the parser's to refuse: they are not escapes at all.
            let parserRefuses = suffix.lowercased().contains("%u")
            #expect(BasePathBoundary.violation(in: suffix) != nil || parserRefuses, "\(suffix)")
        }
        for suffix in letterCases(ordinary) {
            #expect(BasePathBoundary.violation(in: suffix) == nil, "\(suffix)")
            #expect(WorstCaseNormaliser.staysUnder(["base"], path: "/base" + suffix), "\(suffix)")
        }
    }

    @Test func buildingTheUpstreamURLAppliesTheRuleAndKeepsTheQuery() throws {
        let base = try UpstreamURL.parseBase("https://api.example.com/v1/projectA")
        #expect(throws: UpstreamURL.Failure.self) {
            try UpstreamURL.build(base: base, path: "/..;/admin", query: nil)
        }
        #expect(
            try UpstreamURL.build(base: base, path: "//evil.example/x", query: "a=..%2f")
                == "https://api.example.com/v1/projectA//evil.example/x?a=..%2f"
        )
    }
}
