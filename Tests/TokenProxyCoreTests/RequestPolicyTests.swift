import Testing

@testable import TokenProxyForwarding
@testable import TokenProxyHTTP
@testable import TokenProxySupport

struct RequestPolicyTests {
    private func head(_ raw: String) -> HTTPRequestHead {
        var parser = HTTPRequestParser()
        let bytes = Array(raw.utf8)
        let (outcome, _) = bytes.withUnsafeBufferPointer { parser.next($0) }
        guard case .head(let head) = outcome else { preconditionFailure("test request does not parse: \(outcome)") }
        return head
    }

    @Test func defaultAllowedHostsAreLoopbackNamesOnAnyPort() {
        let policy = RequestPolicy(allowedHosts: TestProxy.configuration().allowedHosts, requireHeader: nil)
        for allowed in ["localhost", "localhost:8080", "127.0.0.1:1", "[::1]:8080", "LOCALHOST"] {
            #expect(policy.isAllowed(authority: allowed), "\(allowed)")
        }
        for refused in ["evil.example", "localhost.evil.example", "127.0.0.2", "0.0.0.0", "[::2]"] {
            #expect(!policy.isAllowed(authority: refused), "\(refused)")
        }
    }

    @Test func anAllowedHostWithAPortMatchesOnlyThatPort() {
        let policy = RequestPolicy(allowedHosts: ["proxy.internal:8080"], requireHeader: nil)
        #expect(policy.isAllowed(authority: "proxy.internal:8080"))
        #expect(!policy.isAllowed(authority: "proxy.internal:9090"))
        #expect(!policy.isAllowed(authority: "proxy.internal"))
    }

    /// A Host is compared in its own bytes: letter case, a trailing dot and brackets do not
    /// matter, the port must be the allowed one's, and a host that merely starts or ends like
    /// an allowed one, or differs outside ASCII, is refused.
    @Test func hostsAreComparedWithoutCaseTrailingDotOrBrackets() {
        let policy = RequestPolicy(
            allowedHosts: ["Proxy.Internal:8080", "api.local", "[::1]", "key.local"],
            requireHeader: nil
        )
        for allowed in [
            "proxy.internal:8080", "PROXY.INTERNAL.:8080", "api.local", "API.Local.", "api.local:1", "[::1]:9",
            "[::1]", "::1", "KEY.local",
        ] {
            #expect(policy.isAllowed(authority: allowed), "\(allowed)")
        }
        for refused in [
            "proxy.internal:80800", "proxy.internal:", "proxy.internal:808", "xproxy.internal:8080",
            "proxy.internalx:8080", "api.locals", "api.loca", "ápi.local", "api.local..", "", ":1", "[::2]", "[::1",
            // The Kelvin sign lowercases to an ASCII "k" in Unicode, not in a host name.
            "\u{212A}ey.LOCAL", "\u{212A}EY.local:8080",
        ] {
            #expect(!policy.isAllowed(authority: refused), "\(refused)")
        }
    }

    /// RFC 9112 §3.2.2: with an absolute-form target, its authority is the host and the Host
    /// field is ignored, whatever it says.
    @Test func anAbsoluteFormTargetsAuthorityStandsForHost() {
        let policy = RequestPolicy(allowedHosts: TestProxy.configuration().allowedHosts, requireHeader: nil)
        let allowed = head("GET http://localhost:8080/x HTTP/1.1\r\nHost: evil.example\r\n\r\n")
        #expect(policy.checkAccess(allowed, listener: .withoutOrigin) == nil)
        let refused = head("GET http://evil.example/x HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(policy.checkAccess(refused, listener: .withoutOrigin)?.code == .hostNotAllowed)
    }

    @Test func wildcardDisablesTheHostCheck() {
        let policy = RequestPolicy(allowedHosts: ["*"], requireHeader: nil)
        #expect(
            policy.checkAccess(head("GET / HTTP/1.1\r\nHost: anything.example\r\n\r\n"), listener: .withoutOrigin)
                == nil
        )
    }

    @Test func anOriginWithoutAPortIsOnPort80() {
        let policy = RequestPolicy(allowedHosts: ["localhost", "proxy.internal:8080"], requireHeader: nil)
        func check(_ origin: String, host: String = "localhost", listener: UInt16) -> ProxyError.Code? {
            let request = "POST / HTTP/1.1\r\nHost: \(host)\r\nOrigin: \(origin)\r\nContent-Length: 0\r\n\r\n"
            return policy.checkAccess(head(request), listener: .tcp(host: "127.0.0.1", port: listener))?.code
        }
        #expect(check("http://localhost", listener: 80) == nil)
        #expect(check("http://localhost:80", listener: 80) == nil)
        #expect(check("http://localhost:8080", listener: 80) == .crossSiteRequest)
        #expect(check("http://localhost", listener: 8080) == .crossSiteRequest)
        #expect(check("http://localhost:65536", listener: 0) == .crossSiteRequest)
        #expect(check("http://localhost:-1", listener: 80) == .crossSiteRequest)
        // An allowed host with a port is matched against the origin's port.
        #expect(check("http://proxy.internal:8080", host: "proxy.internal:8080", listener: 8080) == nil)
        #expect(check("http://proxy.internal", host: "proxy.internal:8080", listener: 80) == .crossSiteRequest)
    }

    @Test func withEveryHostAllowedTheOriginMustNameTheRequestsHost() {
        let policy = RequestPolicy(allowedHosts: ["*"], requireHeader: nil)
        func check(_ origin: String, host: String?) -> ProxyError.Code? {
            let hostLine = host.map { "Host: \($0)\r\n" } ?? ""
            let version = host == nil ? "1.0" : "1.1"
            return policy.checkAccess(
                head("GET / HTTP/\(version)\r\n\(hostLine)Origin: \(origin)\r\n\r\n"),
                listener: .tcp(host: "0.0.0.0", port: 8080)
            )?.code
        }
        #expect(check("http://proxy.internal:8080", host: "proxy.internal:8080") == nil)
        #expect(check("http://PROXY.internal.:8080", host: "proxy.internal") == nil)
        #expect(check("http://evil.example:8080", host: "proxy.internal:8080") == .crossSiteRequest)
        #expect(check("http://proxy.internal:8080", host: nil) == .crossSiteRequest)
    }

    @Test func anIPLiteralOriginMustBeTheListenersAddress() {
        let policy = RequestPolicy(allowedHosts: TestProxy.configuration().allowedHosts, requireHeader: nil)
        func served(_ origin: String, listener: String) -> Bool {
            let request = head("POST / HTTP/1.1\r\nHost: localhost\r\nOrigin: \(origin)\r\nContent-Length: 0\r\n\r\n")
            return policy.checkAccess(request, listener: .tcp(host: listener, port: 8080)) == nil
        }
        // Names may resolve to either loopback address.
        for listener in ["127.0.0.1", "::1", "0.0.0.0", "::", "localhost"] {
            #expect(served("http://localhost:8080", listener: listener), "\(listener)")
        }
        #expect(served("http://127.0.0.1:8080", listener: "127.0.0.1"))
        #expect(!served("http://[::1]:8080", listener: "127.0.0.1"))
        #expect(served("http://[::1]:8080", listener: "::1"))
        #expect(!served("http://127.0.0.1:8080", listener: "::1"))
        #expect(served("http://127.0.0.1:8080", listener: "0.0.0.0"))
        #expect(!served("http://[::1]:8080", listener: "0.0.0.0"))
        #expect(served("http://[::1]:8080", listener: "::"))
        #expect(served("http://127.0.0.1:8080", listener: "::"))
    }

    @Test func aListenerWithoutAnOriginRefusesEveryOriginAndReferer() {
        let policy = RequestPolicy(allowedHosts: ["localhost"], requireHeader: nil)
        for header in ["Origin: http://localhost", "Referer: http://localhost/", "Sec-Fetch-Site: same-site"] {
            let request = head("GET / HTTP/1.1\r\nHost: localhost\r\n\(header)\r\n\r\n")
            #expect(policy.checkAccess(request, listener: .withoutOrigin)?.code == .crossSiteRequest, "\(header)")
        }
        let user = head("GET / HTTP/1.1\r\nHost: localhost\r\nSec-Fetch-Site: none\r\n\r\n")
        #expect(policy.checkAccess(user, listener: .withoutOrigin) == nil)
    }

    @Test func constantTimeEquality() {
        #expect(ConstantTime.equals("abc", "abc"))
        #expect(!ConstantTime.equals("abc", "abd"))
        #expect(!ConstantTime.equals("abc", "abcd"))
        #expect(!ConstantTime.equals("", "a"))
        #expect(ConstantTime.equals("", ""))
    }
}
