extension TokenStoreConfiguration {
    /// The store this configuration describes.
    public func makeStore() -> any TokenStore {
        MemoryTokenStore()
    }
}
