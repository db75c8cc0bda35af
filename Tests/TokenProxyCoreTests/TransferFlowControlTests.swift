import CCurl
import Synchronization
import Testing

@testable import TokenProxyCore

struct TransferFlowControlTests {
    /// A delivery that found the client full blocks the transfer; when the next delivery's
    /// own flush drains the client, no writable event follows, so that delivery must end
    /// the block and resume the paused transfer itself (else it waits for a timer).
    @Test func aWritableDeliveryEndsAnEarlierBlock() throws {
        // An engine of the test's own that is never given the transfer: the transfer is driven
        // by hand on this thread, and the engine only counts the resumes it is asked for.
        let engine = try CurlEngine(name: "tokenproxy.test.flow", idleWait: .seconds(3600))
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
        #expect(engine.resumesRequested.load(ordering: .relaxed) == 0)
        transfer.bodyDelivered(chunk.count, consumerWritable: true)
        #expect(engine.resumesRequested.load(ordering: .relaxed) == 1)
    }
}
