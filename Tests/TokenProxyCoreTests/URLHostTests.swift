import Testing

@testable import TokenProxySupport

/// The host of a URL as written, without IDNA processing.
struct URLHostTests {
    @Test(arguments: [
        ("https://a.example/x", "a.example"),
        ("https://user:pw@Host.Example:8443/p", "Host.Example"),
        ("https://a@b@c.example/", "c.example"),
        ("http://[::1]:8080/", "[::1]"),
        ("https://h?x=1", "h"),
        ("https://h#f", "h"),
        ("https://xn--bcher-kva.example/", "xn--bcher-kva.example"),
        ("https://:443/", ""),
        ("https:///path", ""),
    ])
    func theHostIsTheAuthorityWithoutUserAndPort(url: String, host: String) {
        #expect(URLHost.written(in: url) == Substring(host))
    }

    @Test func aURLWithoutAnAuthorityHasNoHost() {
        #expect(URLHost.written(in: "mailto:someone@example.com") == nil)
        #expect(URLHost.written(in: "/relative/path") == nil)
    }
}
