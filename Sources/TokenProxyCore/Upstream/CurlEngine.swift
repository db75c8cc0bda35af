import CCurl
import Foundation

/// What drives libcurl transfers: the seam between ``CurlTransfer`` and the event loop.
///
/// Three implementations exist, chosen by measuring them (`docs/architecture.md`):
/// ``CurlPollEngine`` (one thread in `curl_multi_poll`), ``CurlEpollEngine`` (libcurl's
/// socket API on an epoll set, driven by whichever thread finds it free) and
/// ``CurlDispatchEngine`` (libcurl's socket and timer callbacks on DispatchSources).
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
    /// An easy handle with default options, reused when one is idle (called on the engine).
    func takeEasyHandle() -> UnsafeMutableRawPointer?
    /// Takes back a transfer's easy handle once it left the multi handle (called on the engine).
    func recycle(_ easy: UnsafeMutableRawPointer)
}

/// The engine kinds, for `serve` and `bench/`.
public enum CurlEngineKind: String, Sendable, CaseIterable {
    /// ``CurlPollEngine``.
    case poll
    /// ``CurlEpollEngine``.
    case epoll
    /// ``CurlDispatchEngine``.
    case dispatch

    /// A new engine of this kind.
    public func make() -> any CurlEngine {
        self.make(name: "tp-curl")
    }

    /// How many engines `serve` runs unless told otherwise: one per processor, as nginx's
    /// `worker_processes auto` does, at most 8 (each engine keeps its own upstream
    /// connections, so more engines mean more idle connections to every upstream).
    public static var defaultCount: Int {
        min(8, max(1, ProcessInfo.processInfo.activeProcessorCount))
    }

    /// `count` new engines of this kind (at least one).
    public func make(count: Int) -> [any CurlEngine] {
        (0..<max(1, count)).map { self.make(name: "tp-curl-\($0)") }
    }

    private func make(name: String) -> any CurlEngine {
        switch self {
        case .poll: return CurlPollEngine(name: name)
        case .epoll: return CurlEpollEngine(name: name)
        case .dispatch: return CurlDispatchEngine()
        }
    }
}

/// What a thread asks of an engine that runs an event thread of its own.
enum CurlCommand {
    case add(CurlTransfer)
    case resume(CurlTransfer)
    case cancel(CurlTransfer)
}

/// What the engines do with the transfers libcurl reports done, and with commands.
enum CurlMulti {
    /// Carries out `command` on `multi` for `engine`, whose table of live transfers is
    /// `transfers`; called wherever the engine may call libcurl.
    static func apply(
        _ command: CurlCommand,
        engine: any CurlEngine,
        multi: UnsafeMutableRawPointer,
        transfers: inout [ObjectIdentifier: CurlTransfer]
    ) {
        switch command {
        case .add(let transfer):
            guard let easy = transfer.prepare(engine: engine) else { return }
            transfers[ObjectIdentifier(transfer)] = transfer
            curl_multi_add_handle(multi, easy)
        case .resume(let transfer):
            guard transfers[ObjectIdentifier(transfer)] != nil else { return }
            transfer.unpause()
        case .cancel(let transfer):
            guard let easy = transfer.easy, transfers.removeValue(forKey: ObjectIdentifier(transfer)) != nil else {
                return
            }
            curl_multi_remove_handle(multi, easy)
            transfer.release()
        }
    }

    /// Calls `finish` for every transfer libcurl finished, with its result recorded.
    static func collectFinished(_ multi: UnsafeMutableRawPointer, _ finish: (CurlTransfer) -> Void) {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            var pointer: UnsafeMutableRawPointer?
            _ = tp_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &pointer)
            guard let pointer else { continue }
            let transfer = Unmanaged<CurlTransfer>.fromOpaque(pointer).takeUnretainedValue()
            transfer.result = message.pointee.data.result
            finish(transfer)
        }
    }

    /// Removes a transfer from the multi handle, reports its end to the client and frees its
    /// easy handle; `transfers` is the engine's table, which held it alive until now.
    static func finish(
        _ transfer: CurlTransfer,
        timedOut: Bool,
        multi: UnsafeMutableRawPointer,
        transfers: inout [ObjectIdentifier: CurlTransfer]
    ) {
        guard let easy = transfer.easy, transfers.removeValue(forKey: ObjectIdentifier(transfer)) != nil else {
            return
        }
        curl_multi_remove_handle(multi, easy)
        transfer.complete(timedOut: timedOut)
        transfer.release()
    }
}
