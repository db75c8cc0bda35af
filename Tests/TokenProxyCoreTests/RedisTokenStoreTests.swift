import Foundation
import Synchronization
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials
@testable import TokenProxyMetrics
@testable import TokenProxySupport

/// The Redis token store against a real `redis-server`: stores made here stand for proxies
/// of a fleet, each with its own connections.
@Suite struct RedisTokenStoreTests {
    private func store(
        _ redis: RedisFixture,
        key: String = "k3y-for-the-redis-tests",
        overUnixSocket: Bool = false,
        leaseLifetime: Duration = .seconds(10),
        metrics: ProxyMetrics? = nil
    ) -> RedisTokenStore {
        RedisTokenStore(
            redis.configuration(key: key, overUnixSocket: overUnixSocket),
            leaseLifetime: leaseLifetime,
            metrics: metrics,
            logger: TestLogging.logger
        )
    }

    private func grant(_ access: String, refresh: String? = nil) -> StoredGrant {
        StoredGrant(
            accessToken: access,
            tokenType: "Bearer",
            expiresAt: Date().addingTimeInterval(3600),
            refreshToken: refresh,
            obtainedAt: Date(),
            configFingerprint: "f"
        )
    }

    private func errors(_ metrics: ProxyMetrics, kind: String) throws -> Int {
        let text = String(decoding: metrics.exposition(openConnections: 0), as: UTF8.self)
        let exposition = try PrometheusExposition(text)
        return Int(exposition.value("tokenproxy_token_store_errors_total", ["store": "redis", "kind": kind]) ?? 0)
    }

    @Test func whatOneStoreWritesAnotherReadsOverTCPAndUnixSockets() throws {
        let redis = try RedisFixture(password: "pa55-word")
        let writer = self.store(redis)
        try writer.update { $0.grants["app"] = self.grant("access-1", refresh: "refresh-1") }
        let overSocket = self.store(redis, overUnixSocket: true)
        let read = try overSocket.read()
        #expect(read.grants["app"]?.accessToken == "access-1")
        #expect(read.grants["app"]?.refreshToken == "refresh-1")
        #expect(overSocket.revision()?.hasPrefix("redis:") == true)
    }

    @Test func redisHoldsNoTokenInClear() throws {
        let redis = try RedisFixture()
        let store = self.store(redis)
        try store.update { contents in
            contents.grants["app"] = self.grant("access-s3cret", refresh: "refresh-s3cret")
            contents.pendingRevocations = [
                PendingRevocation(
                    provider: "app",
                    token: "revoke-s3cret",
                    tokenTypeHint: "refresh_token",
                    revocationURL: "http://127.0.0.1:1/revoke",
                    since: Date()
                )
            ]
        }
        let lock = try store.lockProvider("app", deadline: .now + .seconds(5))
        defer { lock.release() }
        let everything = try redis.everything()
        #expect(everything.keys.contains("tokenproxy:tokens"))
        #expect(everything.keys.contains("tokenproxy:lease:app"))
        for (key, values) in everything {
            for value in values {
                #expect(!value.contains("s3cret"), "\(key) holds a token in clear")
                #expect(!value.contains("access_token"), "\(key) holds a record in clear")
            }
        }
        let sealed = try redis.cli(["--raw", "HGET", "tokenproxy:tokens", "grant:app"])
        #expect(sealed.hasPrefix("tp1:"))
    }

    @Test func aValueMovedToAnotherProviderOrWrittenWithoutTheKeyIsRefused() throws {
        let redis = try RedisFixture()
        let metrics = ProxyMetrics()
        let store = self.store(redis, metrics: metrics)
        try store.update { $0.grants["app"] = self.grant("access-app") }
        let sealed = try redis.cli(["--raw", "HGET", "tokenproxy:tokens", "grant:app"])
        // Copied to another provider's field: it opens nowhere but under grant:app.
        try redis.cli(["HSET", "tokenproxy:tokens", "grant:other", sealed])
        // Written in clear, without the key.
        try redis.cli(["HSET", "tokenproxy:tokens", "grant:plain", #"{"access_token": "forged"}"#])
        // Sealed under another key.
        let stranger = self.store(redis, key: "another-key")
        try stranger.update { $0.grants["foreign"] = self.grant("access-foreign") }

        let read = try store.read()
        #expect(read.grants["app"]?.accessToken == "access-app")
        #expect(read.grants["other"] == nil)
        #expect(read.grants["plain"] == nil)
        #expect(read.grants["foreign"] == nil)
        #expect(try self.errors(metrics, kind: "rejected_value") == 3)

        // A refused value is replaced by the next write of its provider.
        try store.update { $0.grants["other"] = self.grant("access-other") }
        #expect(try store.read().grants["other"]?.accessToken == "access-other")
    }

    @Test func aKeyThatCannotBeReadWritesNothing() throws {
        let redis = try RedisFixture()
        var configuration = redis.configuration()
        configuration.encryptionKey = .environment("TP_REDIS_TEST_KEY_NEVER_SET")
        let store = RedisTokenStore(configuration, logger: TestLogging.logger)
        #expect(throws: TokenStoreError.self) {
            try store.update { $0.grants["app"] = self.grant("access-1") }
        }
        #expect(try redis.cli(["EXISTS", "tokenproxy:tokens"]) == "0")
    }

    @Test func anUpdateRacingAnotherWriterKeepsTheOthersWrite() throws {
        let redis = try RedisFixture()
        let first = self.store(redis)
        let second = self.store(redis)
        try first.update { $0.grants["app"] = self.grant("access-1", refresh: "refresh-1") }
        let calls = Mutex(0)
        // While `first` is between its read and its write, `second` rotates the refresh token.
        try first.update { contents in
            let call = calls.withLockedValue { count in
                count += 1
                return count
            }
            if call == 1 {
                try? second.update { $0.grants["app"] = self.grant("access-2", refresh: "refresh-2") }
            }
            contents.grants["app"]?.lastError = "noted"
        }
        // The compare-and-set refused the first attempt; the retry saw the rotated token.
        #expect(calls.withLockedValue { $0 } == 2)
        let stored = try #require(try second.read().grants["app"])
        #expect(stored.refreshToken == "refresh-2")
        #expect(stored.lastError == "noted")
    }

    @Test func aLeaseExcludesOtherProxiesAndADeadHoldersLeaseExpires() throws {
        let redis = try RedisFixture()
        let first = self.store(redis, leaseLifetime: .seconds(3))
        let second = self.store(redis, leaseLifetime: .seconds(3))
        let held = try first.lockProvider("app", deadline: .now + .seconds(5))
        let fence = try redis.cli(["GET", "tokenproxy:lease:app"])
        #expect(throws: TokenStoreError.self) {
            _ = try second.lockProvider("app", deadline: .now + .milliseconds(300))
        }
        // Renewed while held: once its time to live has run down a little, it goes back up.
        func timeToLive() -> Int { (try? redis.cli(["PTTL", "tokenproxy:lease:app"])).flatMap { Int($0) } ?? -1 }
        let lowered = eventually { () -> Int? in
            let left = timeToLive()
            return left > 0 && left < 2_900 ? left : nil
        }
        #expect(lowered != nil)
        #expect(eventually { timeToLive() > (lowered ?? 3_000) })
        #expect(try redis.cli(["GET", "tokenproxy:lease:app"]) == fence)
        held.release()
        let next = try second.lockProvider("app", deadline: .now + .seconds(5))
        next.release()

        // A holder that died: its lease is there, nobody renews it, and it expires.
        try redis.cli(["SET", "tokenproxy:lease:app", "dead-holder", "PX", "500"])
        let after = try second.lockProvider("app", deadline: .now + .seconds(10))
        after.release()
        #expect(try redis.cli(["EXISTS", "tokenproxy:lease:app"]) == "0")
    }

    /// A lease key that holds another type (a prefix shared with another application) is not
    /// a lease: it is left as it is, and this process uses its own lock.
    @Test func aLeaseKeyOfAnotherTypeIsLeftAlone() throws {
        let redis = try RedisFixture()
        try redis.cli(["HSET", "tokenproxy:lease:app", "owner", "another-application"])
        let store = self.store(redis, leaseLifetime: .seconds(1))
        let lock = try store.lockProvider("app", deadline: .now + .seconds(5))
        lock.release()
        #expect(try redis.cli(["TYPE", "tokenproxy:lease:app"]) == "hash")
        #expect(try redis.cli(["PTTL", "tokenproxy:lease:app"]) == "-1")
    }

    @Test func anUnreachableServerFallsBackToMemoryAndSharesOnceItAnswers() throws {
        let redis = try RedisFixture()
        redis.stop()
        let metrics = ProxyMetrics()
        let store = self.store(redis, metrics: metrics)
        // Everything still works, in this process only.
        try store.update { $0.grants["app"] = self.grant("access-local", refresh: "refresh-local") }
        #expect(try store.read().grants["app"]?.accessToken == "access-local")
        let lock = try store.lockProvider("app", deadline: .now + .seconds(5))
        lock.release()
        #expect(store.revision()?.hasPrefix("local:") == true)
        #expect(try self.errors(metrics, kind: "unreachable") >= 1)

        // The server comes back empty: the grant obtained meanwhile is written to it.
        try redis.start()
        #expect(eventually { store.revision()?.hasPrefix("redis:") == true })
        let other = self.store(redis)
        #expect(try other.read().grants["app"]?.refreshToken == "refresh-local")
    }

    @Test func aServerThatNeverAnswersCostsOnlyTheTimeouts() throws {
        // Accepts connections and never answers.
        let (listener, port) = try LoopbackSocket.listening(backlog: 16)
        defer { close(listener) }
        let configuration = RedisStoreConfiguration(
            address: .tcp(host: "127.0.0.1", port: Int(port)),
            encryptionKey: .literal("k3y")
        )
        let metrics = ProxyMetrics()
        let store = RedisTokenStore(
            configuration,
            connectTimeout: .milliseconds(200),
            commandTimeout: .milliseconds(200),
            metrics: metrics,
            logger: TestLogging.logger
        )
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<String?>(nil)
        Thread.detachNewThread {
            do {
                try store.update { $0.grants["app"] = self.grant("access-1") }
                let read = try store.read()
                let lock = try store.lockProvider("app", deadline: .now + .seconds(30))
                lock.release()
                outcome.withLockedValue { $0 = read.grants["app"]?.accessToken }
            } catch {
                outcome.withLockedValue { $0 = "\(error)" }
            }
            done.signal()
        }
        // Far longer than the timeouts: the calls end because of them, not because of this.
        #expect(done.wait(timeout: .now() + 60) == .success)
        #expect(outcome.withLockedValue { $0 } == "access-1")
        #expect(try self.errors(metrics, kind: "unreachable") >= 1)
    }
}
