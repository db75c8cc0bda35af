import Dispatch
import Foundation
import Synchronization

/// Moves log lines to a file descriptor from a thread of its own.
///
/// The proxy logs from Dispatch workers and from the upstream engines' threads. A `write` to
/// standard error there would let a reader that stops taking bytes (a terminal paused with
/// Ctrl-S, a log collector that fell behind on a pipe) stall every thread that logs, and with
/// them the proxy. Lines are appended to a bounded buffer instead, and the writer thread
/// writes them out in order. While the buffer is full, new lines are dropped and counted;
/// the count is reported through ``reportDrops(_:)`` once the descriptor takes bytes again.
///
/// The buffer sits behind a `Mutex`; the writer thread sleeps on a semaphore while there is
/// nothing to write, and whoever queues a line for a sleeping writer wakes it.
package final class LogWriter: Sendable {
    /// The process's standard error.
    package static let standardError = LogWriter(descriptor: Descriptor.standardError)

    /// Bytes waiting for the writer above which new lines are dropped. The writer may hold
    /// as much again while it writes, so this also bounds the memory a stalled reader costs.
    static let defaultLimit = 1 << 20

    /// How long the writer lets lines gather after a write before it looks again.
    private static let gatherSeconds = 0.001

    private struct State {
        var pending: [UInt8] = []
        var dropped = 0
        var writing = false
        var started = false
        /// Whether the writer sleeps on `wake` (or is about to): the next line signals it.
        var writerAsleep = false
        /// Callers of ``flush(timeout:)`` waiting for the buffer to be written out.
        var flushers: [DispatchSemaphore] = []
        var dropReporter: (@Sendable (Int) -> Void)?
    }

    /// What ``append(_:)`` does once the line is in.
    private enum AfterAppend { case nothing, start, wake }

    private let descriptor: Int32
    private let limit: Int
    private let state = Mutex(State())
    /// Signalled once for each time the writer went to sleep on it.
    private let wake = DispatchSemaphore(value: 0)

    /// A writer to `descriptor`, which it does not close. Its thread starts with the first
    /// line and lives as long as the process.
    package init(descriptor: Int32, limit: Int = LogWriter.defaultLimit) {
        self.descriptor = descriptor
        self.limit = limit
    }

    /// Sets what is told, on the writer's thread, how many lines were dropped since the last
    /// report: a logger through this writer turns it into a line of the log's own format.
    package func reportDrops(_ reporter: @escaping @Sendable (Int) -> Void) {
        self.state.withLockedValue { $0.dropReporter = reporter }
    }

    /// Queues one line (its bytes as given, newline included), or drops it when the buffer
    /// is full. Never waits for the descriptor.
    package func append(_ line: some Collection<UInt8>) {
        let next = self.state.withLockedValue { state -> AfterAppend in
            guard state.pending.count + line.count <= self.limit else {
                state.dropped += 1
                return .nothing
            }
            state.pending.append(contentsOf: line)
            if !state.started {
                state.started = true
                return .start
            }
            // While the writer is busy, this is a check in user space.
            guard state.writerAsleep else { return .nothing }
            state.writerAsleep = false
            return .wake
        }
        switch next {
        case .nothing: break
        case .start: NamedThread.start(named: "tp-log-writer") { [self] in self.run() }
        case .wake: self.wake.signal()
        }
    }

    /// Waits until every line queued so far is written, for at most `timeout`; returns
    /// whether it was. For the end of the process, never for a thread serving connections.
    @discardableResult
    package func flush(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        let done = DispatchSemaphore(value: 0)
        let written = self.state.withLockedValue { state -> Bool in
            guard state.pending.isEmpty, !state.writing else {
                state.flushers.append(done)
                return false
            }
            return true
        }
        return written || done.wait(timeout: .after(deadline - .now)) == .success
    }

    private func run() {
        var batch: [UInt8] = []
        while true {
            let taken = self.state.withLockedValue { state -> (dropped: Int, reporter: (@Sendable (Int) -> Void)?)? in
                guard !state.pending.isEmpty || state.dropped > 0 else {
                    state.writerAsleep = true
                    return nil
                }
                swap(&batch, &state.pending)
                defer { state.dropped = 0 }
                state.writing = true
                return (state.dropped, state.dropReporter)
            }
            guard let (dropped, reporter) = taken else {
                self.wake.wait()
                continue
            }

            self.write(batch)
            // Keep a small buffer for the next batch; a burst's large one goes back to malloc.
            batch.removeAll(keepingCapacity: batch.capacity <= 64 * 1024)
            if dropped > 0 {
                // Appends to the buffer just emptied, so it follows the lines written above.
                reporter?(dropped)
            }

            let flushers = self.state.withLockedValue { state -> [DispatchSemaphore] in
                state.writing = false
                guard state.pending.isEmpty else { return [] }
                defer { state.flushers.removeAll() }
                return state.flushers
            }
            flushers.forEach { $0.signal() }
            // Let lines gather for a moment: under load that is one wake-up and one `write`
            // for many lines instead of one each; a line waits at most this long.
            Thread.sleep(forTimeInterval: Self.gatherSeconds)
        }
    }

    /// Writes all of `bytes`, waiting for the descriptor as long as it takes. Bytes the
    /// descriptor refuses for good (a closed pipe) are discarded.
    private func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            try? Descriptor.writeAll(self.descriptor, buffer)
        }
    }
}
