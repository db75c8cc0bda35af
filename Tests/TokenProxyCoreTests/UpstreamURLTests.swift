import Crypto
import Foundation
import Logging
import Synchronization
import Testing

@testable import TokenProxyForwarding
@testable import TokenProxyUpstream

struct UpstreamURLTests {
    @Test func theOriginComesFromTheRouteAndTheRestIsKeptByteForByte() throws {
        let base = try UpstreamURL.parseBase("https://api.example.com/v3/")
        #expect(
            try UpstreamURL.build(base: base, path: "/a%2Fb", query: "x=%2F&y=%aa")
                == "https://api.example.com/v3/a%2Fb?x=%2F&y=%aa"
        )
        #expect(try UpstreamURL.build(base: base, path: "", query: nil) == "https://api.example.com/v3")
        #expect(
            try UpstreamURL.build(base: base, path: "//evil.example/x", query: nil)
                == "https://api.example.com/v3//evil.example/x"
        )
        #expect(
            try UpstreamURL.build(base: base, path: "/@evil.example/x", query: nil)
                == "https://api.example.com/v3/@evil.example/x"
        )
    }

    @Test func aRootUpstreamKeepsTheHostWhateverThePath() throws {
        let base = try UpstreamURL.parseBase("http://127.0.0.1:9000")
        #expect(
            try UpstreamURL.build(base: base, path: "//evil.example:80/x", query: nil)
                == "http://127.0.0.1:9000//evil.example:80/x"
        )
        #expect(try UpstreamURL.build(base: base, path: "", query: "q") == "http://127.0.0.1:9000/?q")
        #expect(throws: UpstreamURL.Failure.self) {
            try UpstreamURL.build(base: base, path: "@evil.example/x", query: nil)
        }
    }

    @Test func anIPv6OriginIsRebuiltWithItsBrackets() throws {
        let base = try UpstreamURL.parseBase("http://[::1]:9000/v1/")
        #expect(base.origin == "http://[::1]:9000")
        #expect(try UpstreamURL.build(base: base, path: "/x", query: "q=1") == "http://[::1]:9000/v1/x?q=1")
        let defaultPort = try UpstreamURL.parseBase("https://API.example.com:443")
        #expect(defaultPort.origin == "https://API.example.com")
        #expect(try UpstreamURL.build(base: defaultPort, path: "", query: nil) == "https://API.example.com/")
    }

    @Test func aBaseQueryIsKeptInFront() throws {
        let base = try UpstreamURL.parseBase("https://api.example.com/v1?key=static")
        #expect(
            try UpstreamURL.build(base: base, path: "/x", query: "a=1") == "https://api.example.com/v1/x?key=static&a=1"
        )
        #expect(try UpstreamURL.build(base: base, path: "", query: nil) == "https://api.example.com/v1?key=static")
        let bare = try UpstreamURL.parseBase("https://api.example.com?key=static")
        #expect(try UpstreamURL.build(base: bare, path: "", query: "a=1") == "https://api.example.com/?key=static&a=1")
        #expect(try UpstreamURL.build(base: bare, path: "/é", query: nil) == "https://api.example.com/é?key=static")
    }
}
