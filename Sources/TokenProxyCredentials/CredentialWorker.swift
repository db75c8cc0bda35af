import TokenProxySupport

/// The worker of credential work which blocks: token requests (waiting for the token
/// endpoint and the store's locks), `command` runs, reads and writes of the token store,
/// waits for what a person types.
typealias CredentialWorker = BlockingWorker

extension BlockingWorker {
    /// The worker the credential sources share; its threads are named `tp-credential`.
    static let shared = BlockingWorker(name: "tp-credential")
}
