import Foundation
import Synchronization
import TokenProxySupport

/// A store that lives in this process only (`"token_store": "memory"`): nothing survives a
/// restart and nothing is shared with other processes. Its provider locks exclude the
/// sources of one process from each other (after a reload, the old and the new source of a
/// provider may both be fetching).
final class MemoryTokenStore: TokenStore {
    private let contents = Mutex(TokenStoreContents())
    private let changes = Atomic<Int>(0)
    private let held = Mutex<Set<String>>([])

    /// Creates an empty store.
    init() {}

    var location: String { "memory" }

    func read() throws(TokenStoreError) -> TokenStoreContents {
        self.contents.withLockedValue { $0 }
    }

    func update<Result>(_ body: (inout TokenStoreContents) -> Result) throws(TokenStoreError) -> Result {
        defer { self.changes.add(1, ordering: .relaxed) }
        return self.contents.withLockedValue { body(&$0) }
    }

    func revision() -> String? {
        String(self.changes.load(ordering: .relaxed))
    }

    func lockProvider(
        _ name: String,
        deadline: ContinuousClock.Instant
    ) throws(TokenStoreError) -> any TokenStoreLock {
        var pause = 0.005
        while !self.held.withLockedValue({ $0.insert(name).inserted }) {
            guard ContinuousClock.now < deadline else {
                throw TokenStoreError(.lockTimeout, "provider \(name) is being refreshed; gave up waiting")
            }
            Thread.sleep(forTimeInterval: pause)
            pause = min(pause * 2, 0.05)
        }
        return MemoryStoreLock(release: { [weak self] in _ = self?.held.withLockedValue { $0.remove(name) } })
    }
}
