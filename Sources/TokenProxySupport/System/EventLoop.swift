import CSystemShims
import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One event loop on Dispatch: a serial queue and one epoll set of descriptors, watched by a
/// single Dispatch read source on that queue. Each wake-up takes every ready descriptor in a
/// batch (`epoll_wait` with no wait) and calls their handlers on the queue, so many sockets
/// ready at once cost one Dispatch event rather than one each.
///
/// The loop's client connections and the upstream engine that serves them (its libcurl
/// sockets) share it: a request read from a client is handed to libcurl, and libcurl's answer
/// written to the client, on the same queue without a hand-off.
///
/// Interest is level-triggered. A descriptor watched for nothing is taken out of the set, so
/// that a hang-up, which epoll reports whatever was asked, cannot spin the loop.
///
/// `@unchecked Sendable`: `handlers` and the batch state are touched only on the queue; the
/// rest is immutable.
package final class EventLoop: @unchecked Sendable {
    /// What a descriptor is ready for, as epoll reported it.
    package struct Readiness: OptionSet, Sendable {
        package let rawValue: Int32
        package init(rawValue: Int32) { self.rawValue = rawValue }
        /// Input, its end, or a failure to read.
        package static let readable = Readiness(rawValue: 1)
        /// Room to write.
        package static let writable = Readiness(rawValue: 2)
        /// An error or hang-up.
        package static let failed = Readiness(rawValue: 4)
    }

    /// The loop's serial queue: handlers run there, and every method but ``init(label:)`` must
    /// be called there.
    package let queue: DispatchQueue
    /// The queue's ``QueueMark``.
    private let mark: Int
    private let epoll: Int32
    private let source: DispatchSourceRead
    private var handlers: [Int32: (Readiness) -> Void] = [:]
    /// Runs after each batch of handlers (queue only).
    private var batchEnded: [() -> Void] = []
    private var readyDescriptors = [Int32](repeating: 0, count: 64)
    private var readyFlags = [Int32](repeating: 0, count: 64)

    /// A loop on a new serial queue called `label`. Fails when no descriptor is left for the
    /// epoll set.
    package init(label: String) throws(SystemError) {
        let epoll = tp_epoll_create()
        guard epoll >= 0 else { throw SystemError(call: "epoll_create1", errno: errno) }
        self.epoll = epoll
        self.queue = DispatchQueue(label: label)
        self.mark = QueueMark.mark(self.queue)
        self.source = DispatchSource.makeReadSource(fileDescriptor: epoll, queue: self.queue)
        self.source.setEventHandler { [unowned self] in self.takeReady() }
        self.source.resume()
    }

    deinit {
        // No handler runs after the cancel; the epoll set closes once Dispatch let go of it.
        let epoll = self.epoll
        self.source.setCancelHandler { Glibc.close(epoll) }
        self.source.cancel()
    }

    /// Calls `handler` on the queue whenever `descriptor` is ready for what it is watched for
    /// (``watch(_:readable:writable:)``), until ``forget(_:)``.
    package func register(_ descriptor: Int32, handler: @escaping (Readiness) -> Void) {
        self.handlers[descriptor] = handler
    }

    /// Watches `descriptor` (registered) for reading and writing as asked; neither takes it out
    /// of the epoll set. `watched` says whether it is in the set now.
    package func watch(_ descriptor: Int32, readable: Bool, writable: Bool, watched: Bool) {
        if readable || writable {
            _ = tp_epoll_watch(self.epoll, descriptor, readable ? 1 : 0, writable ? 1 : 0, watched ? 1 : 0)
        } else if watched {
            tp_epoll_unwatch(self.epoll, descriptor)
        }
    }

    /// Takes `descriptor` out of the set and drops its handler; call it before the descriptor
    /// is closed.
    package func forget(_ descriptor: Int32, watched: Bool) {
        if watched {
            tp_epoll_unwatch(self.epoll, descriptor)
        }
        self.handlers[descriptor] = nil
    }

    /// Runs `body` after every batch of handlers from now on.
    package func afterEachBatch(_ body: @escaping () -> Void) {
        self.batchEnded.append(body)
    }

    /// Whether the caller runs on the loop's queue.
    package var isCurrent: Bool {
        QueueMark.current == self.mark
    }

    /// Takes the ready descriptors in batches of up to 64, running their handlers and then the
    /// end-of-batch work (which hands libcurl its sockets, so that they are read before the
    /// next batch: level-triggered, they would otherwise come back in it). At most
    /// ``batchesPerWakeUp`` batches: what is still ready then makes the Dispatch source fire
    /// again, after the queue's other work.
    private func takeReady() {
        for _ in 0..<Self.batchesPerWakeUp {
            let count = self.readyDescriptors.withUnsafeMutableBufferPointer { descriptors in
                self.readyFlags.withUnsafeMutableBufferPointer { flags in
                    tp_epoll_ready(self.epoll, descriptors.baseAddress, flags.baseAddress, Int32(descriptors.count))
                }
            }
            guard count > 0 else { return }
            for index in 0..<Int(count) {
                self.handlers[self.readyDescriptors[index]]?(Readiness(rawValue: self.readyFlags[index]))
            }
            for body in self.batchEnded {
                body()
            }
            if Int(count) < self.readyDescriptors.count { return }
        }
    }

    /// The most batches one wake-up takes.
    static let batchesPerWakeUp = 4
}
