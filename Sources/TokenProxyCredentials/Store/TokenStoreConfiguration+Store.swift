import Logging
import TokenProxyConfiguration
import TokenProxyMetrics

extension TokenStoreConfiguration {
    /// The store this configuration describes: a ``MemoryTokenStore`` for `"memory"`, a
    /// ``FileTokenStore`` at the path (encrypted when `encryption_key` is set), or a
    /// ``RedisTokenStore`` whose failures go to `logger` and `metrics`. Nothing is read,
    /// created or connected until the store is first used.
    package func makeStore(metrics: ProxyMetrics? = nil, logger: Logger = Logger(label: "tokenproxy")) -> any TokenStore
    {
        switch self {
        case .memory:
            return MemoryTokenStore()
        case .file(let path, let encryptionKey):
            return FileTokenStore(path: path, encryptionKey: encryptionKey)
        case .redis(let configuration):
            return RedisTokenStore(configuration, metrics: metrics, logger: logger)
        }
    }
}
