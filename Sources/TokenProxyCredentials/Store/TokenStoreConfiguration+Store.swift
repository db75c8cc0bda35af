import TokenProxyConfiguration

extension TokenStoreConfiguration {
    /// The store this configuration describes: a ``MemoryTokenStore`` for `"memory"`, else a
    /// ``FileTokenStore`` at the path, encrypted when `encryption_key` is set. Nothing is read
    /// or created until the store is first used.
    package func makeStore() -> any TokenStore {
        switch self {
        case .memory:
            return MemoryTokenStore()
        case .file(let path, let encryptionKey):
            return FileTokenStore(path: path, encryptionKey: encryptionKey)
        }
    }
}
