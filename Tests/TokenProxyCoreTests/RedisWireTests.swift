import Dispatch
import Foundation
import Synchronization
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials
@testable import TokenProxyMetrics
@testable import TokenProxySupport

/// The Redis connection against peers that misbehave on the wire: an answer dripped a byte
/// at a time costs one command timeout, not the drip's length; an answer larger than any the
/// store asks for is refused before it is read whole. Either way the store serves from
/// memory and counts the failure. A name lookup that hangs costs the connect timeout.
/// Serialized: the lookups running at once are counted process-wide.
@Suite(.serialized) struct RedisWireTests {
    private func store(_ peer: FakeRedisPeer, metrics: ProxyMetrics) -> RedisTokenStore {
        RedisTokenStore(
            RedisStoreConfiguration(
                address: .tcp(host: "127.0.0.1", port: Int(peer.port)),
                encryptionKey: .literal("k3y")
            ),
            connectTimeout: .milliseconds(300),
            commandTimeout: .milliseconds(300),
            metrics: metrics,
            logger: TestLogging.logger
        )
    }

    private func unreachable(_ metrics: ProxyMetrics) throws -> Int {
        let text = String(decoding: metrics.exposition(openConnections: 0), as: UTF8.self)
        let exposition = try PrometheusExposition(text)
        return Int(
            exposition.value("tokenproxy_token_store_errors_total", ["store": "redis", "kind": "unreachable"]) ?? 0
        )
    }

    /// Runs `body` on a thread of its own; its outcome, or nil when it did not return in time.
    private func returns(_ body: @escaping @Sendable () -> String) -> String? {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<String?>(nil)
        Thread.detachNewThread {
            let result = body()
            outcome.withLockedValue { $0 = result }
            done.signal()
        }
        guard done.wait(timeout: .now() + 120) == .success else { return nil }
        return outcome.withLockedValue { $0 }
    }

    /// What one read of `store` came to, on a thread of its own: its grant count or its error.
    private func readOutcome(_ store: RedisTokenStore) -> String? {
        self.returns {
            do {
                return "\(try store.read().grants.count) grants"
            } catch {
                return "\(error)"
            }
        }
    }

    @Test func anAnswerDrippedAByteAtATimeCostsOneCommandTimeout() throws {
        // A valid HGETALL answer of about 230 bytes, one byte every 100 ms: well over 20 s.
        let value = String(repeating: "x", count: 200)
        let reply = Array("*2\r\n$5\r\nepoch\r\n$\(value.utf8.count)\r\n\(value)\r\n".utf8)
        let peer = try FakeRedisPeer(.drip(reply: reply, pause: .milliseconds(100)))
        let metrics = ProxyMetrics()
        let store = self.store(peer, metrics: metrics)
        let outcome = self.readOutcome(store)
        // Served from memory (empty) once the whole command's timeout ran out.
        #expect(outcome == "0 grants")
        #expect(!peer.finished, "the call waited for the whole drip")
        #expect(try self.unreachable(metrics) >= 1)
    }

    @Test func anAnswerLargerThanTheLimitIsRefusedBeforeItIsReadWhole() throws {
        let peer = try FakeRedisPeer(.huge(length: 300 << 20))
        let metrics = ProxyMetrics()
        let store = self.store(peer, metrics: metrics)
        let outcome = self.readOutcome(store)
        #expect(outcome == "0 grants")
        // The client hung up after about a mebibyte: what the peer got out is that plus what
        // the two sockets' buffers hold, far from the 300 MiB it announced.
        #expect(eventually { peer.connections >= 1 && peer.ended == peer.connections })
        #expect(!peer.finished)
        #expect(peer.sent < 64 << 20, "\(peer.sent) bytes sent")
        #expect(try self.unreachable(metrics) >= 1)
    }

    @Test func aResolverThatNeverAnswersCostsTheConnectTimeout() throws {
        let release = DispatchSemaphore(value: 0)
        defer {
            for _ in 0..<RedisAddressResolver.lookupLimit { release.signal() }
            // The lookups end once released, and the next test starts with none running.
            #expect(eventually { RedisAddressResolver.runningLookups == 0 })
        }
        let stuck: @Sendable (String) -> Result<[String], RedisError> = { _ in
            release.wait()
            return .success(["127.0.0.1"])
        }
        // Each wait ends at its deadline; the stuck lookups are left running, up to the limit.
        for _ in 0..<RedisAddressResolver.lookupLimit {
            #expect(throws: RedisError.self) {
                _ = try RedisAddressResolver.numericAddresses(
                    of: "redis.example",
                    deadline: .now + .milliseconds(200),
                    lookUp: stuck
                )
            }
        }
        // Past the limit, connecting fails at once instead of starting yet another thread.
        let refused = Mutex<RedisError?>(nil)
        do {
            _ = try RedisAddressResolver.numericAddresses(
                of: "redis.example",
                deadline: .now + .seconds(60),
                lookUp: stuck
            )
        } catch {
            refused.withLockedValue { $0 = error }
        }
        #expect(refused.withLockedValue { $0 }?.message.contains("still running") == true)
    }

    @Test func aHostNameIsResolvedAndEveryAddressTried() throws {
        #expect(RedisAddressResolver.isNumeric("127.0.0.1"))
        #expect(RedisAddressResolver.isNumeric("::1"))
        #expect(!RedisAddressResolver.isNumeric("localhost"))
        let addresses = try RedisAddressResolver.numericAddresses(of: "localhost", deadline: .now + .seconds(10))
        #expect(!addresses.isEmpty)
        #expect(addresses.allSatisfy(RedisAddressResolver.isNumeric))

        // A server on 127.0.0.1 only is reached by name whichever address comes first.
        let redis = try RedisFixture()
        var configuration = redis.configuration()
        configuration.address = .tcp(host: "localhost", port: Int(redis.port))
        let store = RedisTokenStore(configuration, logger: TestLogging.logger)
        #expect(store.unavailability() == nil)
    }
}
