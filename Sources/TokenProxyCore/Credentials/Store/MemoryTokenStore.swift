import Synchronization

/// A store that lives in this process only (`"token_store": "memory"`): nothing survives a
/// restart and nothing is shared with other processes, so its provider lock is only the
/// in-process one.
public final class MemoryTokenStore: TokenStore {
    private let contents = Mutex(TokenStoreContents())

    /// Creates an empty store.
    public init() {}

    public var location: String { "memory" }

    public func read() throws(TokenStoreError) -> TokenStoreContents {
        self.contents.withLock { $0 }
    }

    public func update<Result>(_ body: (inout TokenStoreContents) -> Result) throws(TokenStoreError) -> Result {
        self.contents.withLock { body(&$0) }
    }

    public func lockProvider(
        _ name: String,
        deadline: ContinuousClock.Instant
    ) throws(TokenStoreError) -> any TokenStoreLock {
        // Requests in one process already share one fetch per provider (SharedTokenCache).
        UnlockedStoreLock()
    }
}

/// The lock of a store with no other processes to exclude.
struct UnlockedStoreLock: TokenStoreLock {
    func release() {}
}
