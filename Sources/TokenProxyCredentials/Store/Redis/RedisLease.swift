import Dispatch
import Foundation
import Synchronization
import TokenProxySupport

/// A provider's lease on Redis (`SET KEY FENCE NX PX TTL`), held while one proxy of the fleet
/// asks the token endpoint, together with the process's own provider lock.
///
/// The fencing value is random, so only the holder renews (every third of the lease's
/// lifetime, while the token request runs) or deletes it (``RedisScripts``). A holder that
/// dies stops renewing, and the lease expires after its lifetime: nobody waits for ever.
final class RedisLease: TokenStoreLock {
    private let client: RedisClient
    private let key: String
    private let fence: String
    private let local: any TokenStoreLock
    private let lifetime: Duration
    /// Whether the lease is still held (renewals stop once it is not).
    private let held = Mutex(true)

    /// The queue that renews leases: its commands block up to the command timeout, so they
    /// never run on a queue that serves connections.
    private static let renewals = DispatchQueue(label: "tp-redis-leases")

    /// Takes the lease `key` for the holder of `local`, polling with backoff (10 ms doubling
    /// to 200 ms) until `deadline`. Returns nil when it was not taken in time; throws when the
    /// server cannot be reached.
    static func acquire(
        client: RedisClient,
        key: String,
        lifetime: Duration,
        local: any TokenStoreLock,
        deadline: ContinuousClock.Instant
    ) throws(RedisError) -> RedisLease? {
        var generator = SystemRandomNumberGenerator()
        let fence = Hex.encode((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let milliseconds = String(max(1, lifetime.milliseconds))
        var pause = Duration.milliseconds(10)
        while true {
            let answer = try client.run { connection throws(RedisError) in
                try connection.command(["SET", key, fence, "NX", "PX", milliseconds])
            }
            switch answer {
            case .status:
                return RedisLease(client: client, key: key, fence: fence, lifetime: lifetime, local: local)
            case .null:
                break
            case .error(let message):
                throw RedisError(.refused, "SET \(key) was refused: \(message)")
            default:
                throw RedisError(.refused, "SET \(key) gave an unexpected answer")
            }
            let now = ContinuousClock.now
            guard now < deadline else { return nil }
            Thread.sleep(forTimeInterval: Double(min(pause, deadline - now).milliseconds) / 1000)
            pause = min(pause * 2, .milliseconds(200))
        }
    }

    private init(client: RedisClient, key: String, fence: String, lifetime: Duration, local: any TokenStoreLock) {
        self.client = client
        self.key = key
        self.fence = fence
        self.local = local
        self.lifetime = lifetime
        Self.planRenewal(of: self)
    }

    /// Plans the next renewal a third of the lifetime from now: the deadline scheduler times
    /// it, the renewal queue sends it, and it stops once the lease is released.
    private static func planRenewal(of lease: RedisLease) {
        let interval = Duration.milliseconds(max(1, lease.lifetime.milliseconds / 3))
        DeadlineScheduler.shared.schedule(at: .now + interval) { [weak lease] in
            Self.renewals.async { [weak lease] in
                guard let lease, lease.held.withLock({ $0 }) else { return }
                let arguments = [
                    "EVAL", RedisScripts.renewLease, "1", lease.key, lease.fence, String(lease.lifetime.milliseconds),
                ]
                // A failed renewal is not fatal: the token request goes on, and the lease expires.
                _ = try? lease.client.run { connection throws(RedisError) in try connection.command(arguments) }
                Self.planRenewal(of: lease)
            }
        }
    }

    deinit {
        self.release()
    }

    /// Stops renewing, deletes the lease if it is still this holder's, and releases the
    /// process's lock; later calls do nothing.
    func release() {
        let wasHeld = self.held.withLock { held in
            defer { held = false }
            return held
        }
        guard wasHeld else { return }
        let arguments = ["EVAL", RedisScripts.releaseLease, "1", self.key, self.fence]
        _ = try? self.client.run { connection throws(RedisError) in try connection.command(arguments) }
        self.local.release()
    }
}
