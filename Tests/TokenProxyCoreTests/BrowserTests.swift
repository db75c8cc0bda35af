import Foundation
import Testing

@testable import TokenProxyForwarding

/// A real browser against the proxy: a page on another loopback port (a dev server, a
/// notebook) is another origin, whose requests Chromium marks `Sec-Fetch-Site: same-site`;
/// a page served through the proxy itself is the proxy's own origin.
@Suite(.serialized)
struct BrowserTests {
    /// The requests a page on another port fires at the proxy, by the path each one uses.
    private static func attackPage(proxyPort: UInt16) -> String {
        let proxy = "http://127.0.0.1:\(proxyPort)"
        return """
            <!doctype html><html><body>
            <img src="\(proxy)/api/img">
            <img src="http://localhost:\(proxyPort)/api/img-localhost">
            <script src="\(proxy)/api/script"></script>
            <link rel="stylesheet" href="\(proxy)/api/style">
            <iframe src="\(proxy)/api/frame"></iframe>
            <form id="f" method="POST" action="\(proxy)/api/form" target="sink"><input name="a" value="b"></form>
            <iframe name="sink"></iframe>
            <script>
            fetch("\(proxy)/api/fetch", {mode: "no-cors", credentials: "include"}).catch(() => {});
            fetch("\(proxy)/api/fetch-post", {mode: "no-cors", method: "POST", body: "x"}).catch(() => {});
            navigator.sendBeacon("\(proxy)/api/beacon", "x");
            document.getElementById("f").submit();
            </script>
            </body></html>
            """
    }

    @Test func aPageOnAnotherPortGetsNothingThroughTheProxy() throws {
        let logs = CapturedLogs()
        let upstream = try FakeUpstream()
        let json = """
            {"providers": {"svc": {"grant": "static", "token": "browser-secret-token"}},
             "routes": [{"path_prefix": "/api", "upstream": "http://127.0.0.1:\(upstream.port)/base",
                         "provider": "svc", "allow_insecure_upstream": true}]}
            """
        let proxy = try TestProxy.forwarding(json, logger: logs.logger())
        let devServer = try PageServer(pages: ["/attack.html": Self.attackPage(proxyPort: proxy.port)])

        _ = try HeadlessChromium.dumpDOM(of: "http://127.0.0.1:\(devServer.port)/attack.html")

        #expect(devServer.requests.contains { $0.target == "/attack.html" }, "the browser never loaded the page")
        // The proxy saw the attempts and refused each one.
        let refused = { (path: String) in
            logs.text.split(separator: "\n").contains {
                $0.contains(" path=/api/\(path) ") && $0.contains("status=403")
                    && $0.contains("error=cross_site_request")
            }
        }
        for path in ["img", "img-localhost", "script", "style", "frame", "form", "fetch", "fetch-post"] {
            #expect(eventually { refused(path) }, "no 403 for /api/\(path)")
        }
        #expect(upstream.requests.map(\.target) == [])
        #expect(!logs.text.contains("browser-secret-token"))
    }

    @Test func aPageServedByTheProxyItselfIsServed() throws {
        let page = """
            <!doctype html><html><body><pre id="result">pending</pre>
            <script>
            Promise.all([
              fetch("/app/data-get").then(r => r.status),
              fetch("/app/data-post", {method: "POST", body: "x"}).then(r => r.status),
            ]).then(
              s => { document.getElementById("result").textContent = "get=" + s[0] + " post=" + s[1]; },
              e => { document.getElementById("result").textContent = "failed " + e; });
            </script>
            </body></html>
            """
        let upstream = try PageServer(pages: ["/site/page.html": page])
        let json = """
            {"providers": {"svc": {"grant": "static", "token": "own-origin-token"}},
             "routes": [{"path_prefix": "/app", "upstream": "http://127.0.0.1:\(upstream.port)/site",
                         "provider": "svc", "allow_insecure_upstream": true}]}
            """
        let proxy = try TestProxy.forwarding(json)

        let dom = try HeadlessChromium.dumpDOM(of: "http://127.0.0.1:\(proxy.port)/app/page.html")

        #expect(dom.contains("get=200 post=200"), "the page's same-origin requests: \(dom)")
        let seen = upstream.requests
        let post = seen.first { $0.target == "/site/data-post" }
        #expect(seen.contains { $0.target == "/site/data-get" })
        #expect(post?.headers.first("Authorization") == "Bearer own-origin-token")
        #expect(post?.headers.first("Origin") == "http://127.0.0.1:\(proxy.port)")
        #expect(post?.headers.first("Sec-Fetch-Site") == "same-origin")
    }
}
