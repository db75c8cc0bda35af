import Foundation
import Logging
import Synchronization
import Testing

@testable import TokenProxySupport

/// Drop reports, as the writer's thread makes them.
private final class DropCounter: Sendable {
    private let reports = Mutex<[Int]>([])

    func add(_ count: Int) {
        self.reports.withLockedValue { $0.append(count) }
    }

    var total: Int {
        self.reports.withLockedValue { $0.reduce(0, +) }
    }
}

/// Appends `count` numbered lines from a thread of the test's own, and tells whether they
/// were all appended within a generous limit (the appends never wait for the reader).
private func appendOnAThread(_ writer: LogWriter, count: Int, width: Int) -> Bool {
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        for number in 0..<count {
            let text = String(number)
            writer.append(Array((String(repeating: "0", count: width - text.count) + text + "\n").utf8))
        }
        done.signal()
    }
    thread.start()
    return done.wait(timeout: .now() + 30) == .success
}

@Suite struct LogWriterTests {
    @Test func linesFromManyThreadsArriveWholeAndEachThreadsInOrder() throws {
        let pipe = try LogPipe()
        let writer = LogWriter(descriptor: pipe.writeEnd)
        let threads = 8
        let perThread = 500
        let expected = threads * perThread
        let reader = Mutex("")
        let readerDone = DispatchSemaphore(value: 0)
        // Read while the lines are written: 4,000 lines are more than a pipe holds.
        Thread {
            let text = pipe.read { $0.utf8.count(where: { $0 == UInt8(ascii: "\n") }) >= expected }
            reader.withLockedValue { $0 = text }
            readerDone.signal()
        }.start()
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for number in 0..<perThread {
                writer.append(Array("thread \(thread) line \(number) \(String(repeating: "x", count: 40))\n".utf8))
            }
        }
        #expect(writer.flush(timeout: .seconds(30)))
        #expect(readerDone.wait(timeout: .now() + 30) == .success)

        var next = [Int](repeating: 0, count: threads)
        let lines = reader.withLockedValue { $0 }.split(separator: "\n")
        #expect(lines.count == expected)
        for line in lines {
            let fields = line.split(separator: " ")
            guard fields.count == 5, let thread = Int(fields[1]), let number = Int(fields[3]) else {
                Issue.record("a broken line: \(line)")
                return
            }
            #expect(number == next[thread], "thread \(thread)'s lines out of order")
            #expect(fields[4].count == 40)
            next[thread] = number + 1
        }
        #expect(next == [Int](repeating: perThread, count: threads))
    }

    @Test func aReaderThatStopsNeverStallsTheLoggersAndTheDropsAreReported() throws {
        let pipe = try LogPipe()
        let writer = LogWriter(descriptor: pipe.writeEnd, limit: 64 * 1024)
        let drops = DropCounter()
        writer.reportDrops { count in
            drops.add(count)
            writer.append(Array("dropped \(count)\n".utf8))
        }
        // 2 MB of lines into a pipe nobody reads (it holds 64 KiB) and a 64 KiB buffer: a
        // writing logger would block in the first few hundred lines.
        let lines = 20_000
        #expect(appendOnAThread(writer, count: lines, width: 99))

        // Now read: every line either arrives or is counted in a report that arrives.
        let text = pipe.read { text in
            let (arrived, dropped) = Self.tally(text)
            return arrived.count + dropped >= lines
        }
        #expect(writer.flush(timeout: .seconds(30)))
        let (arrived, dropped) = Self.tally(text)
        #expect(dropped > 0)
        #expect(dropped == drops.total)
        #expect(arrived.count + dropped == lines)
        #expect(arrived.elementsEqual(arrived.sorted()), "lines out of order")
        // The lines before the stall are there, from the first one on.
        #expect(arrived.first == 0)
    }

    /// The numbered lines in `text` and the sum of its drop reports, over whole lines.
    private static func tally(_ text: String) -> (arrived: [Int], dropped: Int) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true).dropLast(text.hasSuffix("\n") ? 0 : 1)
        let dropped = lines.filter { $0.hasPrefix("dropped ") }.compactMap { Int($0.dropFirst(8)) }.reduce(0, +)
        return (lines.compactMap { Int($0) }, dropped)
    }

    @Test func aNonBlockingDescriptorLosesNothing() throws {
        // A descriptor made non-blocking by someone else refuses bytes with EAGAIN while the
        // pipe is full; the writer waits for it instead of discarding them.
        let pipe = try LogPipe(nonBlockingWrites: true)
        let writer = LogWriter(descriptor: pipe.writeEnd, limit: 4 << 20)
        let lines = 20_000
        #expect(appendOnAThread(writer, count: lines, width: 99))
        let text = pipe.read { $0.utf8.count(where: { $0 == UInt8(ascii: "\n") }) >= lines }
        #expect(writer.flush(timeout: .seconds(30)))
        let numbers = text.split(separator: "\n").compactMap { Int($0) }
        #expect(numbers.count == lines)
        #expect(numbers.elementsEqual(0..<lines), "lines lost or out of order")
    }

    @Test func flushGivesUpWhileTheReaderIsStoppedAndSucceedsOnceItReads() throws {
        let pipe = try LogPipe()
        let writer = LogWriter(descriptor: pipe.writeEnd, limit: 4 << 20)
        // 200 KB into a pipe that holds 64 KiB and is not read yet: the writer is stuck.
        let lines = 2_000
        #expect(appendOnAThread(writer, count: lines, width: 99))
        #expect(!writer.flush(timeout: .milliseconds(50)))
        let text = pipe.read { $0.utf8.count(where: { $0 == UInt8(ascii: "\n") }) >= lines }
        #expect(writer.flush(timeout: .seconds(30)))
        #expect(text.split(separator: "\n").compactMap { Int($0) }.elementsEqual(0..<lines))
    }

    /// docs/reference/log-fields.md: Elastic Common Schema names, numbers as numbers, flags as
    /// booleans, other keys under `tokenproxy.`.
    @Test func jsonLinesCarryTheEventAndItsMetadata() throws {
        let pipe = try LogPipe()
        var handler = LineLogHandler(label: "tokenproxy", format: .json, writer: LogWriter(descriptor: pipe.writeEnd))
        handler.metadata["route"] = "api"
        let logger = Logger(label: "tokenproxy") { _ in handler }
        logger.info(
            "request",
            metadata: [
                "status": "200", "path": "/v1/x\"y\u{1}", "method": "GET", "duration_ms": "12", "bytes": "5",
                "client": "127.0.0.1", "replayed": "true", "error": "token_unavailable", "custom": "7",
            ]
        )
        let text = pipe.read { $0.hasSuffix("\n") }
        #expect(text.utf8.count(where: { $0 == UInt8(ascii: "\n") }) == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["message"] as? String == "request")
        #expect(object["log.level"] as? String == "info")
        #expect(object["log.logger"] as? String == "tokenproxy")
        #expect(object["tokenproxy.route"] as? String == "api")
        #expect(object["http.response.status_code"] as? Int == 200)
        #expect(object["http.request.method"] as? String == "GET")
        #expect(object["url.path"] as? String == "/v1/x\"y\u{1}")
        #expect(object["event.duration"] as? Int == 12_000_000)
        #expect(object["http.response.body.bytes"] as? Int == 5)
        #expect(object["client.address"] as? String == "127.0.0.1")
        #expect(object["tokenproxy.replayed"] as? Bool == true)
        #expect(object["error.code"] as? String == "token_unavailable")
        #expect(object["tokenproxy.custom"] as? String == "7")
        let timestamp = try #require(object["@timestamp"] as? String)
        #expect(timestamp.hasSuffix("Z") && timestamp.count == 24, "\(timestamp)")
        let parser = ISO8601DateFormatter()
        parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        #expect(parser.date(from: timestamp) != nil)
    }

    @Test func textLinesAreSwiftLogsStreamLinesThroughTheWriter() throws {
        // The same events through swift-log's own StreamLogHandler and through LineLogHandler
        // give the same lines, but for the time, which is checked for its form.
        final class Capture: TextOutputStream, @unchecked Sendable {
            /// What the handler wrote: only this test's thread logs through it, and reads it
            /// after logging.
            var text = ""
            func write(_ string: String) { self.text += string }
        }
        let capture = Capture()
        let pipe = try LogPipe()
        var text = LineLogHandler(label: "tokenproxy.test", format: .text, writer: LogWriter(descriptor: pipe.writeEnd))
        text.metadata["route"] = "api"
        var stream = StreamLogHandler(label: "tokenproxy.test", stream: capture, metadataProvider: nil)
        stream.metadata["route"] = "api"
        for handler in [text, stream] as [any LogHandler] {
            let logger = Logger(label: "tokenproxy.test") { _ in handler }
            logger.info("request", metadata: ["status": "200", "path": "/v1/x", "route": "other"])
            logger.warning("no metadata of its own")
            logger.error("with \"quotes\" and = signs", metadata: ["b": "2", "a": "1"])
        }
        let ours = pipe.read { $0.split(separator: "\n").count >= 3 }.split(separator: "\n")
        let theirs = capture.text.split(separator: "\n")
        #expect(ours.count == 3)
        #expect(ours.map { $0.drop { $0 != " " } } == theirs.map { $0.drop { $0 != " " } })
        for line in ours {
            let time = String(line.prefix { $0 != " " })
            // 2026-11-23T14:18:02+0000
            #expect(time.count == 24, "\(time)")
            #expect(time.dropFirst(10).first == "T")
            #expect(time.dropFirst(19).first == "+" || time.dropFirst(19).first == "-")
        }
    }
}
