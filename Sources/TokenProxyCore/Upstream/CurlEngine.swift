/// What drives libcurl transfers: the seam between ``CurlTransfer`` and the event loop.
///
/// Two implementations exist, chosen by measuring them (`docs/architecture.md`):
/// ``CurlPollEngine`` (one thread in `curl_multi_poll`) and ``CurlDispatchEngine``
/// (libcurl's socket and timer callbacks on DispatchSources).
public protocol CurlEngine: AnyObject, Sendable {
    /// Starts a transfer; its callbacks run on the engine from now on.
    func add(_ transfer: CurlTransfer)
    /// Continues a transfer one of whose directions was paused.
    func resume(_ transfer: CurlTransfer)
    /// Stops a transfer.
    func cancel(_ transfer: CurlTransfer)
    /// Called on the engine by a transfer that collected something for its client.
    func outboxReady(_ transfer: CurlTransfer)
    /// Sets engine-specific options on a new easy handle (called on the engine).
    func configure(_ easy: UnsafeMutableRawPointer)
}

/// The engine kinds, for `serve` and `bench/`.
public enum CurlEngineKind: String, Sendable, CaseIterable {
    /// ``CurlPollEngine``.
    case poll
    /// ``CurlDispatchEngine``.
    case dispatch

    /// A new engine of this kind.
    public func make() -> any CurlEngine {
        switch self {
        case .poll: return CurlPollEngine()
        case .dispatch: return CurlDispatchEngine()
        }
    }
}
