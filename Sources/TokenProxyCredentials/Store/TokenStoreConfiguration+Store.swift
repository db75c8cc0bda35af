import Logging
import TokenProxyConfiguration
import TokenProxyMetrics

extension TokenStoreConfiguration {
    /// The store this configuration describes: a ``MemoryTokenStore`` for `"memory"`, a
    /// ``FileTokenStore`` at the path (encrypted when `encryption_key` is set), or a
    /// ``RedisTokenStore`` whose failures go to `logger` and `metrics`. Nothing is read,
    /// created or connected until the store is first used. `sharedOnly` is for one-shot
    /// commands: a Redis store that cannot be reached fails (`unavailable`) instead of
    /// keeping the change in the memory of a process about to end.
    package func makeStore(
        metrics: ProxyMetrics? = nil,
        logger: Logger = Logger(label: "tokenproxy"),
        sharedOnly: Bool = false
    ) -> any TokenStore {
        switch self {
        case .memory:
            return MemoryTokenStore()
        case .file(let path, let encryptionKey):
            return FileTokenStore(path: path, encryptionKey: encryptionKey)
        case .redis(let configuration):
            return RedisTokenStore(configuration, sharedOnly: sharedOnly, metrics: metrics, logger: logger)
        }
    }
}
