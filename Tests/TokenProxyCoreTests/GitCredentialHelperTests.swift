import Foundation
import Testing
import TokenProxyConfiguration

@testable import TokenProxyCredentials

/// `credential git`: parsing git's attributes, matching them against the routes, and the
/// lines printed back (git-credential(1)).
@Suite struct GitCredentialHelperTests {
    private static func parse(_ text: String) throws(GitCredentialRequest.ParseError) -> GitCredentialRequest {
        try GitCredentialRequest.parse(Array(text.utf8))
    }

    @Test func parsesAttributesUntilTheBlankLine() throws {
        let request = try Self.parse(
            "protocol=https\nhost=Git.Example:8443\npath=org/r.git\ncapability[]=authtype\ncapability[]=state\n"
                + "password=a=b \r\n\r\nhost=ignored\n"
        )
        #expect(request.scheme == "https")
        #expect(request.host == "Git.Example:8443")
        #expect(request.path == "org/r.git")
        #expect(request.capabilities == ["authtype", "state"])
        #expect(request.acceptsAuthtype)
        #expect(request.secret == "a=b ")
    }

    @Test(arguments: [
        ("host=x\0y\n", GitCredentialRequest.ParseError.nul),
        ("protocol=https\nhost\n", .malformedLine(2)),
        (String(repeating: "a=b\n", count: GitCredentialRequest.maxLines + 1), .tooManyLines),
    ])
    func refusesHostileInput(input: String, expected: GitCredentialRequest.ParseError) {
        #expect(throws: expected) { try Self.parse(input) }
    }

    @Test func refusesAnOversizedLine() {
        let input = Array("a=".utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: GitCredentialRequest.maxBytes)
        #expect(throws: GitCredentialRequest.ParseError.tooLarge) { try GitCredentialRequest.parse(input) }
    }

    @Test func refusesInvalidUTF8() {
        #expect(throws: GitCredentialRequest.ParseError.notUTF8) {
            try GitCredentialRequest.parse(Array("host=".utf8) + [0xFF, 0x0A])
        }
    }

    private static let routes = [
        RouteConfiguration(pathPrefix: "/a", upstream: "https://git.example.com", provider: "host"),
        RouteConfiguration(pathPrefix: "/b", upstream: "https://git.example.com/team", provider: "team"),
        RouteConfiguration(pathPrefix: "/c", upstream: "https://GIT.example.com:8443/", provider: "port"),
        RouteConfiguration(pathPrefix: "/d", upstream: "http://plain.example:80", provider: "plain"),
        RouteConfiguration(pathPrefix: "/e", upstream: "https://open.example"),
        RouteConfiguration(pathPrefix: "/f", upstream: "https://[::1]:9000/x", provider: "v6"),
    ]

    @Test(
        arguments: [
            ("https", "git.example.com", nil, "host"),
            ("https", "git.example.com:443", nil, "host"),
            ("https", "git.example.com", "team/repo.git", "team"),
            ("https", "git.example.com", "team/my repo.git", "team"),
            ("https", "git.example.com", "team/repo.git/", "team"),
            ("https", "git.example.com", "teams/repo.git", "host"),
            ("https", "git.example.com", "other/repo.git", "host"),
            ("https", "git.example.com:8443", "any/repo.git", "port"),
            ("https", "git.example.com:9443", nil, nil),
            ("http", "git.example.com", nil, nil),
            ("http", "plain.example", nil, "plain"),
            ("https", "open.example", nil, nil),
            ("https", "[::1]:9000", "x/y.git", "v6"),
            ("https", "[::1]:9000", "y.git", nil),
        ] as [(String, String, String?, String?)]
    )
    func matchesRoutes(scheme: String, host: String, path: String?, expected: String?) {
        var attributes = ["protocol": scheme, "host": host]
        attributes["path"] = path
        let matcher = GitCredentialMatcher(routes: Self.routes)
        #expect(matcher.provider(for: GitCredentialRequest(attributes: attributes)) == expected)
    }

    /// Host strings that a URL parser would reduce to a route's host (dropping user-info,
    /// decoding percent-escapes, cutting at a path) are not that host: no token.
    @Test(arguments: [
        "evil.com@git.example.com", "x:y@git.example.com", "evil.com\\@git.example.com", "git.example.com:443/evil",
        "git.example.com/evil", "git%2Eexample.com", "%67it.example.com", "git.example.com:443@evil.com",
        "git.example.com ", " git.example.com", "git.example.com\t", "git.example.com:", "git.example.com:0",
        "git.example.com:65536", "git.example.com:+443", "git.example.com:0x1bb", "git.example.com:443:443",
        "git.example.com#", "git.example.com?", "[::1]", "[::1%25lo]:9000", "[::1]x:9000", "[::1]:9000/x", "",
        "git.ex\u{00E4}mple.com", "git.example.com\u{2024}", "[]:9000", "[git.example.com]", "git.example.com:00443",
    ])
    func hostileHostsMatchNothing(host: String) {
        let matcher = GitCredentialMatcher(routes: Self.routes)
        for path: String? in [nil, "team/repo.git", "x/y.git"] {
            var attributes = ["protocol": "https", "host": host]
            attributes["path"] = path
            #expect(
                matcher.provider(for: GitCredentialRequest(attributes: attributes)) == nil,
                "\(host) \(path ?? "-")"
            )
        }
    }

    /// A path that the server may resolve into another route's repository matches nothing,
    /// not even the host-wide route.
    @Test(arguments: [
        "team-a/../team/repo.git", "team/../other/repo.git", "team/./repo.git", "./team/repo.git", "team/%2e%2e/x.git",
        "team/%2E./x.git", "team/.%2e/x.git", "team/%2e/x.git", "team%2frepo.git", "team%2Frepo.git", "team%5crepo.git",
        "team\\..\\other.git", "team/repo.git\n", "team-a/..;/team/x.git", "team/%2e%2e;x/y.git", "team//repo.git",
        "team/\u{FF0E}\u{FF0E}/x.git", "team/%c0%ae%c0%ae/x.git", "team/%25252e%25252e/x.git", "team/%00/x.git",
        "team/\u{7F}/repo.git",
    ])
    func hostilePathsMatchNothing(path: String) {
        let matcher = GitCredentialMatcher(routes: Self.routes)
        let request = GitCredentialRequest(attributes: ["protocol": "https", "host": "git.example.com", "path": path])
        #expect(matcher.provider(for: request) == nil)
    }

    /// The literal forms git writes still match, in any case and with the default port.
    @Test(
        arguments: [
            ("GIT.Example.COM", "host"), ("git.example.com:443", "host"), ("git.example.com:8443", "port"),
            ("[::1]:9000", "v6"), ("[0:0:0:0:0:0:0:1]:9000", nil),
        ] as [(String, String?)]
    )
    func literalHostsMatch(host: String, expected: String?) {
        let matcher = GitCredentialMatcher(routes: Self.routes)
        #expect(
            matcher.provider(for: GitCredentialRequest(attributes: ["protocol": "https", "host": host])) == expected
        )
    }

    @Test func noProtocolOrHostMatchesNothing() {
        let matcher = GitCredentialMatcher(routes: Self.routes)
        #expect(matcher.provider(for: GitCredentialRequest(attributes: ["host": "git.example.com"])) == nil)
        #expect(matcher.provider(for: GitCredentialRequest(attributes: ["protocol": "https"])) == nil)
    }

    @Test func printsUsernameAndPasswordOrBearer() {
        let expiry = Date(timeIntervalSince1970: 1_900_000_000.7)
        let basic = GitCredentialResponse(token: "t0k", username: "x-access-token", expiresAt: expiry, bearer: false)
        #expect(basic.text == "username=x-access-token\npassword=t0k\npassword_expiry_utc=1900000000\n")
        let bearer = GitCredentialResponse(token: "t0k", username: "u", expiresAt: nil, bearer: true)
        #expect(bearer.text == "capability[]=authtype\nauthtype=Bearer\ncredential=t0k\n")
    }

    @Test func expiryMovesFromTheMonotonicToTheWallClock() throws {
        let now = ContinuousClock.now
        let date = Date(timeIntervalSince1970: 1_000)
        let wall = try #require(GitCredentialResponse.wallClock(now + .seconds(90), now: now, date: date))
        #expect(wall.timeIntervalSince1970 == 1_090)
        #expect(GitCredentialResponse.wallClock(nil) == nil)
    }

    @Test func eraseRemovesOnlyTheTokenGitGaveBack() throws {
        let store = MemoryTokenStore()
        try store.update { $0.grants["p"] = StoredGrant(accessToken: "old", refreshToken: "r") }
        #expect(try store.eraseAccessToken(provider: "p", value: "newer") == false)
        #expect(try store.read().grants["p"]?.accessToken == "old")
        #expect(try store.eraseAccessToken(provider: "p", value: "old"))
        let grant = try store.read().grants["p"]
        #expect(grant?.accessToken == nil)
        #expect(grant?.refreshToken == "r")
        #expect(try store.eraseAccessToken(provider: "none", value: "old") == false)
    }
}
