import Foundation
import Testing

/// 1 GiB each way through the proxy, with memory sampled from /proc while it streams.
/// The bound is deliberately loose (other tests run in the same process): it catches
/// buffering a body, which would grow memory by the body's size.
@Suite(.serialized)
struct StreamingMemoryTests {
    private static let gibibyte = Int(ProcessInfo.processInfo.environment["TP_STREAM_BYTES"] ?? "") ?? (1 << 30)
    private static let allowedGrowth = 200 * 1024 * 1024

    @Test func aOneGiBDownloadStreamsInBoundedMemory() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        let before = ProcessMemory.residentBytes()
        var peak = before
        try client.send("GET /api/download/\(Self.gibibyte)?length HTTP/1.1\r\nHost: localhost\r\n\r\n")
        let head = try client.readHead()
        #expect(head.header("Content-Length") == String(Self.gibibyte))
        var received = 0
        var nextSample = 0
        let complete = try client.streamBody(of: head) { bytes in
            received += bytes.count
            if received >= nextSample {
                peak = max(peak, ProcessMemory.residentBytes())
                nextSample += 16 * 1024 * 1024
            }
        }
        #expect(complete)
        #expect(received == Self.gibibyte)
        #expect(peak - before < Self.allowedGrowth, "resident memory grew by \((peak - before) >> 20) MiB")
    }

    @Test func aOneGiBUploadStreamsInBoundedMemory() throws {
        let fixture = try ForwardingFixture()
        let client = try fixture.client()
        let before = ProcessMemory.residentBytes()
        var peak = before
        try client.send("PUT /api/echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(Self.gibibyte)\r\n\r\n")
        let chunk = [UInt8](repeating: 0x5A, count: 1 << 20)
        for index in 0..<(Self.gibibyte / chunk.count) {
            try client.send(chunk)
            if index % 16 == 0 {
                peak = max(peak, ProcessMemory.residentBytes())
            }
        }
        let response = try client.readResponse()
        #expect(response.status == 200)
        #expect(response.header("X-Body-Length") == String(Self.gibibyte))
        #expect(peak - before < Self.allowedGrowth, "resident memory grew by \((peak - before) >> 20) MiB")
    }
}
