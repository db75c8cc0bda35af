import Foundation
import Synchronization
import Testing
import TokenProxySupport

/// Several `tokenproxy serve` processes sharing one `redis-server`, as a fleet of sidecars
/// does (`docs/guide/redis.md`): one token request per provider for the whole fleet, and
/// every request answered while Redis is away.
@Suite(.serialized) struct RedisFleetTests {
    private struct Fleet {
        let redis: RedisFixture
        let authorization: FakeAuthorizationServer
        let upstream: FakeUpstream
        let proxies: [TokenProxyProcess]
    }

    private func fleet(size: Int, expiresIn: Int = 3600, delay: Double = 0.3, skew: Int = 60) throws -> Fleet {
        let redis = try RedisFixture(password: "fleet-pa55")
        let authorization = try FakeAuthorizationServer()
        authorization.expiresIn = expiresIn
        authorization.delay = delay
        let upstream = try FakeUpstream()
        let configuration = """
            {"token_store": {"redis": {"url": "redis://127.0.0.1:\(redis.port)/2", "password": "fleet-pa55",
                                       "encryption_key": "fleet-k3y-for-tests", "key_prefix": "fleet:"}},
             "providers": {"svc": {"grant": "client_credentials", "token_url": "\(authorization.tokenURL)",
                                   "client_id": "c", "client_secret": "s", "allow_insecure_endpoints": true,
                                   "refresh_skew_seconds": \(skew)}},
             "routes": [{"path_prefix": "/api", "upstream": "http://127.0.0.1:\(upstream.port)", "provider": "svc",
                         "allow_insecure_upstream": true}]}
            """
        let proxies = try (0..<size).map { _ in try TokenProxyProcess(configuration: configuration) }
        return Fleet(redis: redis, authorization: authorization, upstream: upstream, proxies: proxies)
    }

    /// Sends `count` requests at once, spread over the proxies; the statuses (0: no answer).
    private func burst(_ fleet: Fleet, count: Int) -> [Int] {
        let statuses = Mutex<[Int]>([])
        let ports = fleet.proxies.map(\.port)
        DispatchQueue.concurrentPerform(iterations: count) { index in
            let port = ports[index % ports.count]
            let status = (try? TestClient(port: port, timeout: 30).get("/api/item/\(index)").status) ?? 0
            statuses.withLockedValue { $0.append(status) }
        }
        return statuses.withLockedValue { $0 }
    }

    /// A generated DPoP key goes into Redis with the tokens bound to it (sealed), so the
    /// whole fleet proves possession of one key with one token.
    @Test func aFleetSharesTheDPoPKeyWithTheToken() throws {
        let redis = try RedisFixture(password: "fleet-pa55")
        let server = try FakeDPoPServer()
        server.tokenDelay = 0.3
        let configuration = """
            {"token_store": {"redis": {"url": "redis://127.0.0.1:\(redis.port)/2", "password": "fleet-pa55",
                                       "encryption_key": "fleet-k3y-for-tests", "key_prefix": "fleet:"}},
             "providers": {"svc": {"grant": "client_credentials", "token_url": "\(server.tokenURL)",
                                   "client_id": "c", "client_secret": "s", "allow_insecure_endpoints": true,
                                   "dpop": {"alg": "ES256"}}},
             "routes": [{"path_prefix": "/api", "upstream": "\(server.origin)/resource", "provider": "svc",
                         "allow_insecure_upstream": true}]}
            """
        let proxies = try (0..<3).map { _ in try TokenProxyProcess(configuration: configuration) }
        let statuses = Mutex<[Int]>([])
        let ports = proxies.map(\.port)
        DispatchQueue.concurrentPerform(iterations: 30) { index in
            let port = ports[index % ports.count]
            let status = (try? TestClient(port: port, timeout: 30).get("/api/item/\(index)").status) ?? 0
            statuses.withLockedValue { $0.append(status) }
        }
        #expect(statuses.withLockedValue { $0 }.allSatisfy { $0 == 200 })
        #expect(server.tokenRequests.filter { $0.status == 200 }.count == 1)
        #expect(Set(server.requests.compactMap(\.thumbprint)).count == 1)
        #expect(server.resourceRequests.allSatisfy { $0.problem == nil })
        let sealed = try redis.cli(["-n", "2", "--raw", "HGET", "fleet:tokens", "grant:svc"])
        #expect(sealed.hasPrefix("tp1:") && !sealed.contains("PRIVATE KEY"))
    }

    @Test func hundredsOfColdRequestsOnThreeProxiesMakeOneTokenRequest() throws {
        let fleet = try self.fleet(size: 3)
        let statuses = self.burst(fleet, count: 300)
        #expect(statuses.filter { $0 == 200 }.count == 300, "\(Set(statuses))")
        #expect(fleet.authorization.requests.count == 1)
        // Every proxy sent the one token.
        let sent = Set(fleet.upstream.requests.compactMap { $0.headers.first("Authorization") })
        #expect(sent == ["Bearer issued-1"])
        // Redis holds it sealed only, in database 2 under the prefix.
        let everything = try fleet.redis.everything()
        #expect(everything.isEmpty, "database 0 is not used")
        let sealed = try fleet.redis.cli(["-n", "2", "--raw", "HGET", "fleet:tokens", "grant:svc"])
        #expect(sealed.hasPrefix("tp1:"))
        #expect(!sealed.contains("issued-1"))
    }

    @Test func aShortTokenLifetimeGivesOneTokenRequestPerLifetimeForTheFleet() throws {
        // Stale 1 s before it expires, renewed in the background 1 s before that: each token
        // serves about 4 s, whichever proxy renews it.
        let fleet = try self.fleet(size: 3, expiresIn: 6, delay: 0, skew: 1)
        var statuses: [Int] = []
        var index = 0
        // Until the fleet has gone through three tokens (the fake server counts what it issued).
        while fleet.authorization.requests.count < 3 && index < 2_000 {
            let proxy = fleet.proxies[index % fleet.proxies.count]
            statuses.append((try? TestClient(port: proxy.port, timeout: 30).get("/api/tick/\(index)").status) ?? 0)
            index += 1
            usleep(50_000)
        }
        #expect(statuses.allSatisfy { $0 == 200 }, "\(Set(statuses))")
        #expect(fleet.authorization.requests.count >= 3)
        // Shared, every token but the newest was sent by every proxy: each proxy on its own
        // would have asked for its own tokens, each sent by one proxy only. Which proxy sent a
        // request is in its path (index modulo the fleet's size).
        var senders: [String: Set<Int>] = [:]
        for request in fleet.upstream.requests {
            guard let token = request.headers.first("Authorization"),
                let tick = request.target.split(separator: "/").last.flatMap({ Int($0) })
            else { continue }
            senders[token, default: []].insert(tick % fleet.proxies.count)
        }
        let issued = fleet.authorization.requests.count
        for number in 1..<issued {
            #expect(senders["Bearer issued-\(number)"]?.count == fleet.proxies.count, "issued-\(number): \(senders)")
        }
    }

    @Test func redisKilledAndRestartedMidRunLosesNoRequest() throws {
        let fleet = try self.fleet(size: 2, delay: 0)
        #expect(self.burst(fleet, count: 20).allSatisfy { $0 == 200 })
        #expect(fleet.authorization.requests.count == 1)

        fleet.redis.stop()
        let during = self.burst(fleet, count: 40)
        #expect(during.allSatisfy { $0 == 200 }, "\(Set(during))")
        // Each proxy notices, logs it once and counts it; readyz stays ready.
        for proxy in fleet.proxies {
            #expect(
                eventually {
                    proxy.output.line("token store unreachable: each proxy gets its own tokens until it answers") != nil
                }
            )
            let ready = try TestClient.outcome(port: proxy.port, target: "/_tokenproxy/readyz")
            #expect(ready == .answered(200))
            let metrics = try TestClient(port: proxy.port).get("/_tokenproxy/metrics")
            let exposition = try PrometheusExposition(String(decoding: metrics.body, as: UTF8.self))
            let errors = exposition.value(
                "tokenproxy_token_store_errors_total",
                ["store": "redis", "kind": "unreachable"]
            )
            #expect((errors ?? 0) >= 1)
        }

        // Restarted empty: the proxies notice, and the next token request refills it.
        try fleet.redis.start()
        #expect(
            eventually {
                self.burst(fleet, count: 4).allSatisfy { $0 == 200 }
                    && (try? fleet.redis.cli(["-n", "2", "EXISTS", "fleet:tokens"])) == "1"
            }
        )
        let after = self.burst(fleet, count: 40)
        #expect(after.allSatisfy { $0 == 200 }, "\(Set(after))")
    }

    /// A lease key that never expires (written by hand or by a tool, or whose TTL a replica
    /// dropped), or that would live a day, blocks the provider for at most one lease lifetime
    /// (10 s, within the default 15 s token wait): the fleet takes it over, still with one
    /// token request, and the proxy that found it warns and counts it.
    @Test(arguments: [["stuck"], ["stuck", "PX", "86400000"]])
    func aLeaseWithNoExpiryOrAnAbsurdOneIsTakenOverWithinALifetime(value: [String]) throws {
        let fleet = try self.fleet(size: 2, delay: 0)
        try fleet.redis.cli(["-n", "2", "SET", "fleet:lease:svc"] + value)
        let statuses = self.burst(fleet, count: 20)
        #expect(statuses.allSatisfy { $0 == 200 }, "\(Set(statuses))")
        #expect(fleet.authorization.requests.count == 1)
        // The stale key was cut to one lifetime by the first proxy to find it, then replaced.
        #expect(try fleet.redis.cli(["-n", "2", "GET", "fleet:lease:svc"]) != "stuck")
        var found = 0.0
        for proxy in fleet.proxies {
            let metrics = try TestClient(port: proxy.port).get("/_tokenproxy/metrics")
            let exposition = try PrometheusExposition(String(decoding: metrics.body, as: UTF8.self))
            found +=
                exposition.value("tokenproxy_token_store_errors_total", ["store": "redis", "kind": "stale_lease"]) ?? 0
        }
        #expect(found == 1)
        let warning =
            "token store lease had no expiry or a longer one than a lease has: cut to one lease lifetime, then taken over"
        #expect(fleet.proxies.map { $0.output.count(warning) }.reduce(0, +) == 1)
    }
}
