import CCurl
import Synchronization
import Testing

@testable import TokenProxyUpstream

struct TransferFlowControlTests {
    /// A delivery that found the client full blocks the transfer; when the next delivery's
    /// own flush drains the client, no writable event follows, so that delivery must end
    /// the block and resume the paused transfer itself (else it waits for a timer).
    @Test func aWritableDeliveryEndsAnEarlierBlock() throws {
        // An engine of the test's own that is never given the transfer: the transfer is driven
        // by hand on this thread, and the engine, asleep with nothing to do, shows whether a
        // resume was asked for: a command marks it awake at once and wakes its thread.
        let name = "tp-test-flow"
        let engine = try sleepyEngine(name)
        #expect(eventually { engine.isAsleep })
        let transfer = CurlTransfer.unstarted(engine: engine)
        _ = try #require(transfer.prepare())
        defer { transfer.release() }
        let chunk = [UInt8](repeating: 0, count: 256 * 1024)
        for _ in 0..<2 {
            #expect(chunk.withUnsafeBytes { transfer.receivedBody($0) } == chunk.count)
        }
        // 512 KiB in flight: the next bytes pause the transfer.
        #expect(chunk.withUnsafeBytes { transfer.receivedBody($0) } == tp_writefunc_pause())
        let blocks = try #require(threadBlockCount(named: name))
        transfer.bodyDelivered(chunk.count, consumerWritable: false)
        #expect(engine.isAsleep, "a resume was asked for while the client could take nothing")
        transfer.bodyDelivered(chunk.count, consumerWritable: true)
        #expect(eventually { threadBlockCount(named: name).map { $0 > blocks } ?? false })
    }

    // MARK: The state machine, event by event

    /// An event of a transfer's life and what the state machine must answer to it.
    enum Step: CustomStringConvertible {
        case append(Int, resume: Bool, pause: Bool)
        case end(resume: Bool)
        case read(TransferFlowControl.ReadAction)
        case consumed(Int, resumeProducer: Bool)
        case arrived(Int, accepted: Bool)
        case delivered(Int, writable: Bool, resume: Bool)
        case writable(resume: Bool)

        var description: String {
            switch self {
            case .append(let count, let resume, let pause): "append \(count) → resume \(resume), pause \(pause)"
            case .end(let resume): "end → resume \(resume)"
            case .read(let action): "read → \(action)"
            case .consumed(let count, let resume): "consumed \(count) → resume producer \(resume)"
            case .arrived(let count, let accepted): "arrived \(count) → accepted \(accepted)"
            case .delivered(let count, let writable, let resume): "delivered \(count), writable \(writable) → \(resume)"
            case .writable(let resume): "writable → resume \(resume)"
            }
        }
    }

    private static let kib = 1024

    /// Named walks through the state machine; each step's answer is checked.
    static let walks: [(String, [Step])] = [
        (
            // A delivery that found the client full blocks the transfer; the next delivery's
            // own flush drained the socket, so no writable event follows: that delivery must
            // end the block and resume the paused transfer itself.
            "a writable delivery ends an earlier block",
            [
                .arrived(256 * kib, accepted: true), .arrived(256 * kib, accepted: true),
                .arrived(1, accepted: false), .delivered(256 * kib, writable: false, resume: false),
                .delivered(256 * kib, writable: true, resume: true),
                .arrived(1, accepted: true),
            ]
        ),
        (
            // libcurl asked for body bytes when none were buffered: the next bytes resume it.
            "a read pause is resumed by the next bytes",
            [
                .read(.pause), .append(10, resume: true, pause: false), .read(.copy),
                .consumed(10, resumeProducer: false),
            ]
        ),
        (
            // ... or by the end of the body, which libcurl then reads as the end.
            "a read pause is resumed by the end of the body",
            [.read(.pause), .end(resume: true), .read(.end)]
        ),
        (
            "bytes and the end both arriving during a read pause resume it once",
            [
                .read(.pause), .append(5, resume: true, pause: false), .end(resume: false), .read(.copy),
                .consumed(5, resumeProducer: false), .read(.end),
            ]
        ),
        (
            "the producer pauses at the high mark and resumes at the low mark, once",
            [
                .append(200 * kib, resume: false, pause: false), .append(56 * kib, resume: false, pause: true),
                .append(1 * kib, resume: false, pause: false), .read(.copy),
                .consumed(192 * kib, resumeProducer: false), .consumed(1 * kib, resumeProducer: true),
                .consumed(1 * kib, resumeProducer: false),
            ]
        ),
        (
            "an ended body with bytes buffered is copied before its end",
            [
                .append(3, resume: false, pause: false), .end(resume: false), .read(.copy),
                .consumed(3, resumeProducer: false), .read(.end),
            ]
        ),
        (
            "the write callback pauses at the out-pending limit and resumes below it",
            [
                .arrived(512 * kib, accepted: true), .arrived(1, accepted: false),
                .delivered(1, writable: true, resume: true),
            ]
        ),
        (
            "a writable consumer that was never paused resumes nothing",
            [.arrived(10, accepted: true), .writable(resume: false), .delivered(10, writable: true, resume: false)]
        ),
        (
            "a blocked consumer pauses the write callback until it drains",
            [
                .arrived(10, accepted: true), .delivered(10, writable: false, resume: false),
                .arrived(10, accepted: false), .writable(resume: true), .arrived(10, accepted: true),
            ]
        ),
    ]

    @Test(arguments: Self.walks.map(\.0))
    func walk(_ name: String) throws {
        let steps = try #require(Self.walks.first { $0.0 == name }?.1)
        var flow = TransferFlowControl()
        for (index, step) in steps.enumerated() {
            switch step {
            case .append(let count, let resume, let pause):
                let answer = flow.bodyAppended(count)
                #expect(answer.resumeTransfer == resume && answer.pauseProducer == pause, "step \(index): \(step)")
            case .end(let resume):
                #expect(flow.bodyEnded() == resume, "step \(index): \(step)")
            case .read(let action):
                #expect(flow.readRequested() == action, "step \(index): \(step)")
            case .consumed(let count, let resume):
                #expect(flow.bodyConsumed(count) == resume, "step \(index): \(step)")
            case .arrived(let count, let accepted):
                #expect(flow.responseArrived(count) == accepted, "step \(index): \(step)")
            case .delivered(let count, let writable, let resume):
                #expect(flow.responseDelivered(count, consumerWritable: writable) == resume, "step \(index): \(step)")
            case .writable(let resume):
                #expect(flow.consumerBecameWritable() == resume, "step \(index): \(step)")
            }
        }
    }
}
