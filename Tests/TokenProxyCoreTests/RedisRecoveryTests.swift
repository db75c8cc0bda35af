import Foundation
import Synchronization
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials
@testable import TokenProxyMetrics
@testable import TokenProxySupport
@testable import TokenProxyUpstream

/// The Redis token store when the server loses, refuses or takes over what the store relies
/// on, against a real `redis-server`: a hash gone (restart, eviction, deletion), writes
/// refused while reads work, a lease lost during its token request, and one-shot commands
/// that have no memory to fall back on.
@Suite struct RedisRecoveryTests {
    private func grant(_ access: String, refresh: String? = nil, obtainedAt: Date = Date()) -> StoredGrant {
        StoredGrant(
            accessToken: access,
            tokenType: "Bearer",
            expiresAt: Date().addingTimeInterval(3600),
            refreshToken: refresh,
            obtainedAt: obtainedAt,
            configFingerprint: "f"
        )
    }

    private func errors(_ metrics: ProxyMetrics, kind: String) throws -> Int {
        let text = String(decoding: metrics.exposition(openConnections: 0), as: UTF8.self)
        let exposition = try PrometheusExposition(text)
        return Int(exposition.value("tokenproxy_token_store_errors_total", ["store": "redis", "kind": kind]) ?? 0)
    }

    @Test(arguments: [["FLUSHALL"], ["DEL", "tokenproxy:tokens"]])
    func aServerThatLostTheHashGetsTheRefreshChainBack(loss: [String]) throws {
        let redis = try RedisFixture()
        let provider = try FakeOAuthProvider()
        provider.acceptRefreshToken("seed-1")
        let configuration = TestProxy.configuration(
            """
            {"token_store": {"redis": {"url": "\(redis.url)", "encryption_key": "k3y-for-the-redis-tests"}},
             "providers": {"app": {"grant": "refresh_token", "token_url": "\(provider.origin)/token", "client_id": "c",
               "refresh_token": "seed-1", "allow_insecure_endpoints": true}},
             "routes": []}
            """
        )
        guard case .redis(let settings) = configuration.tokenStore else {
            Issue.record("the configuration names no Redis store")
            return
        }
        let registry = CredentialRegistry(
            configuration: configuration,
            fetcher: UpstreamFetcher(engine: ForwardingFixture.engine),
            store: RedisTokenStore(settings, logger: TestLogging.logger),
            logger: TestLogging.logger
        )
        let source = try #require(registry.entry("app")).source
        let first = try source.waitForToken().get()
        #expect(first.value == "access-1")

        // The seed is spent; the only live refresh token is refresh-1, held by the store.
        try redis.cli(loss)
        // The registry's look at the store notices, and the proxy writes its tokens back.
        #expect(eventually { (try? redis.cli(["HEXISTS", "tokenproxy:tokens", "grant:app"])) == "1" })

        source.invalidate(first)
        let second = try source.waitForToken().get()
        #expect(second.value == "access-2")
        #expect(provider.count("refresh_token") == 2)
        let shared = try RedisTokenStore(settings, logger: TestLogging.logger).read()
        #expect(shared.grants["app"]?.refreshToken == "refresh-2")
    }

    @Test func aStoreThatMissedTheLossWritesItsGrantBackOnItsNextWrite() throws {
        let redis = try RedisFixture()
        let store = RedisTokenStore(redis.configuration(), logger: TestLogging.logger)
        try store.update { contents in
            contents.grants["app"] = self.grant("access-1", refresh: "refresh-1")
            contents.grants["other"] = self.grant("access-o", refresh: "refresh-o")
        }
        try redis.cli(["FLUSHALL"])
        // A write of another provider does not give up the grant the server lost.
        try store.update { $0.grants["other"] = self.grant("access-o2", refresh: "refresh-o2") }
        let fresh = try RedisTokenStore(redis.configuration(), logger: TestLogging.logger).read()
        #expect(fresh.grants["app"]?.refreshToken == "refresh-1")
        #expect(fresh.grants["other"]?.refreshToken == "refresh-o2")
        // A deliberate deletion in the same hash is kept: it is not a loss.
        let other = RedisTokenStore(redis.configuration(), logger: TestLogging.logger)
        try other.update { $0.grants["app"] = nil }
        #expect(try store.read().grants["app"] == nil)
        #expect(try redis.cli(["HEXISTS", "tokenproxy:tokens", "grant:app"]) == "0")
    }

    @Test func writesRefusedWhileReadsWorkKeepTheRotatedTokenAndAreReported() throws {
        let redis = try RedisFixture()
        try redis.cli(["ACL", "SETUSER", "reader", "on", ">reader-pa55", "~*", "+@read", "+@connection"])
        let writer = RedisTokenStore(redis.configuration(), logger: TestLogging.logger)
        try writer.update { $0.grants["app"] = self.grant("access-1", refresh: "refresh-1") }

        var configuration = redis.configuration()
        configuration.username = "reader"
        configuration.password = .literal("reader-pa55")
        let logs = CapturedLogs()
        let metrics = ProxyMetrics()
        let reader = RedisTokenStore(configuration, metrics: metrics, logger: logs.logger())
        #expect(try reader.read().grants["app"]?.refreshToken == "refresh-1")
        // The server refuses the write (NOPERM); the rotated token stays in this proxy.
        try reader.update { $0.grants["app"] = self.grant("access-2", refresh: "refresh-2") }
        #expect(try reader.read().grants["app"]?.refreshToken == "refresh-2")
        #expect(try self.errors(metrics, kind: "refused") >= 1)
        let warnings = logs.events.filter { $0.message.hasPrefix("token store refused a command") }
        #expect(warnings.count == 1)

        // Once the server takes writes, the rotated token reaches it.
        try redis.cli(["ACL", "SETUSER", "reader", "+@all"])
        #expect(
            eventually {
                _ = reader.revision(); return (try? writer.read().grants["app"]?.refreshToken) == "refresh-2"
            }
        )
        #expect(logs.events.contains { $0.message == "token store accepts writes again" })
    }

    @Test func aLostLeaseIsReportedAndItsWriteKeepsTheNewHoldersLaterGrant() throws {
        let redis = try RedisFixture()
        let metrics = ProxyMetrics()
        let first = RedisTokenStore(
            redis.configuration(),
            leaseLifetime: .seconds(3),
            metrics: metrics,
            logger: TestLogging.logger
        )
        let second = RedisTokenStore(redis.configuration(), logger: TestLogging.logger)
        let lease = try first.lockProvider("app", deadline: .now + .seconds(5))
        // Another proxy holds the lease now (the first one's expired while it was stalled).
        try redis.cli(["SET", "tokenproxy:lease:app", "another-proxy", "PX", "60000"])
        // The first one's next renewal finds it and reports it.
        #expect(eventually { ((try? self.errors(metrics, kind: "lease_lost")) ?? 0) >= 1 })

        try second.update { $0.grants["app"] = self.grant("access-new", refresh: "refresh-new") }
        // The first one's token request ends: its grant, obtained earlier, does not replace
        // the new holder's.
        let earlier = Date().addingTimeInterval(-60)
        try first.update { $0.grants["app"] = self.grant("access-old", refresh: "refresh-old", obtainedAt: earlier) }
        #expect(try second.read().grants["app"]?.refreshToken == "refresh-new")
        #expect(try self.errors(metrics, kind: "lease_lost") >= 2)
        lease.release()
        // Releasing leaves the other proxy's lease alone.
        #expect(try redis.cli(["GET", "tokenproxy:lease:app"]) == "another-proxy")
    }

    @Test func anOlderValueCopiedBackIsRefusedAndRepaired() throws {
        let redis = try RedisFixture()
        let metrics = ProxyMetrics()
        let store = RedisTokenStore(redis.configuration(), metrics: metrics, logger: TestLogging.logger)
        try store.update { $0.grants["app"] = self.grant("access-1", refresh: "refresh-1") }
        let first = try redis.cli(["--raw", "HGET", "tokenproxy:tokens", "grant:app"])
        try store.update { $0.grants["app"] = self.grant("access-2", refresh: "refresh-2") }
        #expect(try store.read().grants["app"]?.refreshToken == "refresh-2")

        // Someone with access to Redis, but not the key, copies the earlier value back (with
        // its counter): it opens, but it is older than what this proxy read.
        try redis.cli(["HSET", "tokenproxy:tokens", "grant:app", first, "generation:grant:app", "1"])
        #expect(try store.read().grants["app"]?.refreshToken == "refresh-2")
        #expect(try self.errors(metrics, kind: "rejected_value") == 1)
        // This proxy's copy was written back over it.
        #expect(try redis.cli(["--raw", "HGET", "tokenproxy:tokens", "grant:app"]) != first)
        let other = RedisTokenStore(redis.configuration(), logger: TestLogging.logger)
        #expect(try other.read().grants["app"]?.refreshToken == "refresh-2")
    }

    @Test func aValueRemovedWithoutAWriteIsWrittenBackButALogoutIsFollowed() throws {
        let redis = try RedisFixture()
        let store = RedisTokenStore(redis.configuration(), logger: TestLogging.logger)
        try store.update { $0.grants["app"] = self.grant("access-1", refresh: "refresh-1") }
        #expect(try store.read().grants["app"]?.refreshToken == "refresh-1")
        // Removed behind the proxies' back (its write count did not move): not a logout.
        try redis.cli(["HDEL", "tokenproxy:tokens", "grant:app"])
        #expect(try store.read().grants["app"]?.refreshToken == "refresh-1")
        #expect(try redis.cli(["HEXISTS", "tokenproxy:tokens", "grant:app"]) == "1")
        // Deleted by another proxy (a write): followed.
        let other = RedisTokenStore(redis.configuration(), logger: TestLogging.logger)
        try other.update { $0.grants["app"] = nil }
        #expect(try store.read().grants["app"] == nil)
        #expect(try redis.cli(["HEXISTS", "tokenproxy:tokens", "grant:app"]) == "0")
    }

    @Test func aSharedOnlyStoreFailsInsteadOfKeepingChangesInMemory() throws {
        let redis = try RedisFixture()
        redis.stop()
        let store = RedisTokenStore(redis.configuration(), sharedOnly: true, logger: TestLogging.logger)
        #expect(throws: TokenStoreError.self) {
            try store.update { $0.grants["app"] = self.grant("access-1") }
        }
        #expect(throws: TokenStoreError.self) { try store.read() }
        #expect(throws: TokenStoreError.self) {
            _ = try store.lockProvider("app", deadline: .now + .seconds(5))
        }
        // The process's own lock was given back.
        let again = try MemoryTokenStore().lockProvider("app", deadline: .now + .seconds(1))
        again.release()
    }

    @Test func loginLogoutAndTokenFailWhenRedisCannotBeReached() throws {
        let redis = try RedisFixture()
        redis.stop()
        let directory = try ScriptDirectory()
        let config = directory.path("proxy.json")
        try """
        {"token_store": {"redis": {"url": "\(redis.url)", "encryption_key": "k3y-for-the-redis-tests"}},
         "providers": {"api": {"grant": "refresh_token", "token_url": "https://auth.example/token",
                               "client_id": "c", "refresh_token": "seed"}},
         "routes": []}
        """.write(toFile: config, atomically: true, encoding: .utf8)
        for command in [["logout", "api"], ["token", "api"], ["login", "api"]] {
            let run = try TokenProxyBinary.run(command + ["--config", config])
            #expect(run.status != 0, "\(command): \(run.stdout)")
            #expect(run.stderr.contains("cannot be used"), "\(command): \(run.stderr)")
        }
    }
}
