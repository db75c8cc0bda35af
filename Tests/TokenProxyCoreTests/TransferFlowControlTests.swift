import CCurl
import Synchronization
import Testing

@testable import TokenProxyCore

/// An engine that only counts resumes; transfers are driven by hand.
private final class ResumeCountingEngine: CurlEngine, @unchecked Sendable {
    private let count = Mutex(0)
    var resumes: Int { self.count.withLock { $0 } }

    func add(_ transfer: CurlTransfer) {}
    func resume(_ transfer: CurlTransfer) { self.count.withLock { $0 += 1 } }
    func cancel(_ transfer: CurlTransfer) {}
    func outboxReady(_ transfer: CurlTransfer) {}
    func configure(_ easy: UnsafeMutableRawPointer) {}
    func takeEasyHandle() -> UnsafeMutableRawPointer? { curl_easy_init() }
    func recycle(_ easy: UnsafeMutableRawPointer) { curl_easy_cleanup(easy) }
}

struct TransferFlowControlTests {
    /// A delivery that found the client full blocks the transfer; when the next delivery's
    /// own flush drains the client, no writable event follows, so that delivery must end
    /// the block and resume the paused transfer itself (else it waits for a timer).
    @Test func aWritableDeliveryEndsAnEarlierBlock() throws {
        let engine = ResumeCountingEngine()
        let transfer = CurlTransfer.unstarted()
        _ = try #require(transfer.prepare(engine: engine))
        defer { transfer.release() }
        let chunk = [UInt8](repeating: 0, count: 256 * 1024)
        for _ in 0..<2 {
            #expect(chunk.withUnsafeBytes { transfer.receivedBody($0) } == chunk.count)
        }
        // 512 KiB in flight: the next bytes pause the transfer.
        #expect(chunk.withUnsafeBytes { transfer.receivedBody($0) } == tp_writefunc_pause())
        transfer.bodyDelivered(chunk.count, consumerWritable: false)
        #expect(engine.resumes == 0)
        transfer.bodyDelivered(chunk.count, consumerWritable: true)
        #expect(engine.resumes == 1)
    }
}
