import Foundation
import Testing

@testable import TokenProxyMetrics

/// `metrics` (docs/reference/metrics.md): the series move with the traffic, the output is
/// strict Prometheus text that `promtool` accepts and a real Prometheus server scrapes, and no
/// request can create a series.
struct MetricsTests {
    private struct Traffic {
        let auth: FakeAuthorizationServer
        let fixture: ForwardingFixture
    }

    private func traffic() throws -> Traffic {
        let auth = try FakeAuthorizationServer()
        let fixture = try ForwardingFixture(
            provider: """
                {"grant": "client_credentials", "token_url": "\(auth.tokenURL)", "allow_insecure_endpoints": true,
                 "client_id": "metrics", "client_secret": "m-s3cret"}
                """
        )
        return Traffic(auth: auth, fixture: fixture)
    }

    private func scrape(_ fixture: ForwardingFixture) throws -> (TestClient.Response, PrometheusExposition) {
        let response = try fixture.client().get("/_tokenproxy/metrics")
        #expect(response.status == 200)
        let text = String(decoding: response.body, as: UTF8.self)
        return (response, try PrometheusExposition(text))
    }

    @Test func countsMoveWithTheTraffic() throws {
        let traffic = try self.traffic()
        let fixture = traffic.fixture
        for _ in 0..<3 {
            #expect(try fixture.client().get("/api/x").status == 200)
        }
        #expect(try fixture.client().get("/nowhere").status == 404)
        #expect(try fixture.client().get("/dead/x").status == 502)
        fixture.upstream.revoke("Bearer issued-1")
        #expect(try fixture.client().get("/api/protected").status == 200)

        let (response, metrics) = try self.scrape(fixture)
        #expect(response.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
        #expect(metrics.value("tokenproxy_requests_total", ["route": "api", "status": "2xx"]) == 4)
        #expect(metrics.value("tokenproxy_requests_total", ["route": "none", "status": "4xx"]) == 1)
        #expect(metrics.value("tokenproxy_requests_total", ["route": "dead", "status": "5xx"]) == 1)
        #expect(metrics.value("tokenproxy_request_duration_seconds_count", ["route": "api"]) == 4)
        #expect(metrics.value("tokenproxy_upstream_errors_total", ["route": "dead", "kind": "unreachable"]) == 1)
        #expect(metrics.value("tokenproxy_replays_total", ["route": "api"]) == 1)
        #expect(metrics.value("tokenproxy_token_requests_total", ["provider": "svc", "result": "success"]) == 2)
        #expect(traffic.auth.requests.count == 2)
        let expiresIn = try #require(metrics.value("tokenproxy_token_expires_in_seconds", ["provider": "svc"]))
        #expect(expiresIn > 3000 && expiresIn <= 3600)
        #expect(metrics.value("tokenproxy_open_connections") ?? 0 >= 1)
        #expect(metrics.types["tokenproxy_request_duration_seconds"] == "histogram")
        #expect(metrics.types["tokenproxy_open_connections"] == "gauge")
        for name in metrics.types.keys {
            #expect(metrics.help[name]?.isEmpty == false, "no HELP for \(name)")
        }

        // The scrape itself is counted under the admin label.
        let (_, again) = try self.scrape(fixture)
        #expect(again.value("tokenproxy_requests_total", ["route": "admin", "status": "2xx"]) == 1)
    }

    @Test func aFailedTokenRequestIsCountedAsAnError() throws {
        let traffic = try self.traffic()
        traffic.auth.enqueue(.init(status: 400, body: #"{"error": "invalid_client"}"#))
        #expect(try traffic.fixture.client().get("/api/x").status == 502)
        let (_, metrics) = try self.scrape(traffic.fixture)
        #expect(metrics.value("tokenproxy_token_requests_total", ["provider": "svc", "result": "error"]) == 1)
        #expect(metrics.value("tokenproxy_requests_total", ["route": "api", "status": "5xx"]) == 1)
    }

    @Test func requestsToUnknownPathsDoNotGrowTheSeries() throws {
        let traffic = try self.traffic()
        let fixture = traffic.fixture
        #expect(try fixture.client().get("/unknown-first").status == 404)
        let (_, before) = try self.scrape(fixture)

        let client = try fixture.client()
        var generator = SystemRandomNumberGenerator()
        for index in 0..<1000 {
            let segment = String(UInt64.random(in: 0...UInt64.max, using: &generator), radix: 36)
            let method = ["GET", "POST", "DELETE", "PATCH"][index % 4]
            try client.send(
                "\(method) /\(segment)/\(index)?q=\(segment) HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n"
            )
            #expect(try client.readResponse().status == 404)
        }
        let (_, after) = try self.scrape(fixture)
        // The admin label appears with the first scrape; nothing else is new.
        let key = { (sample: PrometheusExposition.Sample) in
            sample.name + sample.labels.sorted { $0.key < $1.key }.map { "|\($0)=\($1)" }.joined()
        }
        let newSeries = Set(after.samples.map(key)).subtracting(before.samples.map(key))
        #expect(!newSeries.isEmpty && newSeries.allSatisfy { $0.contains("|route=admin") }, "\(newSeries)")
        #expect(after.samples.count == before.samples.count + newSeries.count)
        #expect(after.value("tokenproxy_requests_total", ["route": "none", "status": "4xx"]) == 1001)
    }

    @Test func metricsAreRefusedWhereStatusIsRefused() throws {
        let traffic = try self.traffic()
        let client = try traffic.fixture.client()
        try client.send("GET /_tokenproxy/metrics HTTP/1.1\r\nHost: evil.example\r\n\r\n")
        #expect(try client.readResponse().status == 403)
        let browser = try traffic.fixture.client()
        try browser.send(
            "GET /_tokenproxy/metrics HTTP/1.1\r\nHost: localhost\r\nOrigin: https://evil.example\r\n"
                + "Sec-Fetch-Site: cross-site\r\n\r\n"
        )
        #expect(try browser.readResponse().status == 403)
    }

    @Test func metricsAreServedOnTheAdminListener() throws {
        let configuration = TestProxy.configuration(
            #"{"admin": {"listen": "127.0.0.1:0"}, "providers": {}, "routes": []}"#
        )
        let proxy = try TestProxy(configuration)
        guard case .inet(_, let port)? = proxy.addresses.admin else {
            Issue.record("no admin listener")
            return
        }
        let response = try TestClient(port: port).get("/metrics")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == ProxyMetrics.contentType)
        _ = try PrometheusExposition(String(decoding: response.body, as: UTF8.self))
    }

    @Test func promtoolAcceptsTheOutput() throws {
        let traffic = try self.traffic()
        #expect(try traffic.fixture.client().get("/api/x").status == 200)
        #expect(try traffic.fixture.client().get("/nowhere").status == 404)
        let response = try traffic.fixture.client().get("/_tokenproxy/metrics")
        let promtool = try PrometheusTools.require("promtool")
        let result = try PrometheusTools.run(promtool, ["check", "metrics"], input: response.body)
        #expect(result.status == 0, "promtool: \(result.output)")
    }

    @Test func aRealPrometheusServerScrapesIt() throws {
        let traffic = try self.traffic()
        #expect(try traffic.fixture.client().get("/api/x").status == 200)
        let server = try PrometheusTools.Server(target: "127.0.0.1:\(traffic.fixture.proxy.port)")
        defer { server.stop() }
        let query = "tokenproxy_requests_total{route=\"api\",status=\"2xx\"}"
        let result = eventually { () -> [[String: Any]]? in
            guard let answer = try? server.query(query), !answer.isEmpty else { return nil }
            return answer
        }
        let series = try #require(result, "Prometheus did not scrape the proxy: \(server.log)")
        let sample = try #require(series.first)
        #expect((sample["metric"] as? [String: String])?["route"] == "api")
        #expect((sample["value"] as? [Any])?.last as? String == "1")
    }

    @Test func eachRouteAndStatusClassKeepsItsOwnCount() throws {
        let metrics = ProxyMetrics()
        let statuses: [Int?] = [200, 204, 404, nil, 99, 503, 200, 101, 302]
        for status in statuses {
            metrics.requestFinished(route: "api", status: status, duration: .milliseconds(3))
        }
        metrics.requestFinished(route: "other", status: 200, duration: nil)
        let text = String(decoding: metrics.exposition(openConnections: 0), as: UTF8.self)
        let exposition = try PrometheusExposition(text)
        let expected: [String: Double] = ["2xx": 3, "4xx": 1, "none": 2, "5xx": 1, "1xx": 1, "3xx": 1]
        for (status, count) in expected {
            #expect(exposition.value("tokenproxy_requests_total", ["route": "api", "status": status]) == count)
        }
        #expect(exposition.value("tokenproxy_requests_total", ["route": "other", "status": "2xx"]) == 1)
        #expect(exposition.value("tokenproxy_request_duration_seconds_count", ["route": "api"]) == 9)
        #expect(exposition.value("tokenproxy_request_duration_seconds_count", ["route": "other"]) == nil)
    }

    /// A route's series taken once (as a configuration's router keeps it) counts into the same
    /// lines as requests counted by the route's name, and taking it again, as a reload does,
    /// gives the same series; a status class no request had shows no line.
    @Test func aRoutesSeriesTakenOnceCountsWithItsName() throws {
        let metrics = ProxyMetrics()
        let series = metrics.series(forRoute: "api")
        series.requestFinished(status: 200, duration: .milliseconds(2))
        metrics.requestFinished(route: "api", status: 201, duration: .milliseconds(4))
        let again = metrics.series(forRoute: "api")
        #expect(again === series)
        again.requestFinished(status: 502, duration: nil)
        #expect(metrics.series(forRoute: "other") !== series)
        let text = String(decoding: metrics.exposition(openConnections: 0), as: UTF8.self)
        let exposition = try PrometheusExposition(text)
        #expect(exposition.value("tokenproxy_requests_total", ["route": "api", "status": "2xx"]) == 2)
        #expect(exposition.value("tokenproxy_requests_total", ["route": "api", "status": "5xx"]) == 1)
        #expect(exposition.value("tokenproxy_requests_total", ["route": "api", "status": "4xx"]) == nil)
        #expect(exposition.value("tokenproxy_request_duration_seconds_count", ["route": "api"]) == 2)
        #expect(exposition.value("tokenproxy_requests_total", ["route": "other", "status": "2xx"]) == nil)
    }
}
