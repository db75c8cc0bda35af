import Testing

@testable import TokenProxySupport

struct ByteQueueTests {
    @Test func bytesComeOutInOrderAcrossAppendsAndReads() {
        var queue = ByteQueue(compactionThreshold: 4)
        queue.append(contentsOf: [1, 2, 3])
        queue.append(contentsOf: [4, 5, 6, 7])
        var out = [UInt8](repeating: 0, count: 5)
        let first = out.withUnsafeMutableBytes { queue.read(into: $0) }
        #expect(first == 5 && out == [1, 2, 3, 4, 5])
        #expect(queue.count == 2)
        queue.append(contentsOf: [8])
        #expect(queue.withUnsafeReadableBytes { Array($0) } == [6, 7, 8])
        queue.consume(2)
        #expect(queue.withUnsafeReadableBytes { Array($0) } == [8])
    }

    @Test func anEmptyReadCopiesNothing() {
        var queue = ByteQueue()
        var out = [UInt8](repeating: 9, count: 3)
        #expect(out.withUnsafeMutableBytes { queue.read(into: $0) } == 0)
        #expect(out == [9, 9, 9] && queue.isEmpty)
    }

    /// A producer that stays ahead of the consumer never lets the consumed prefix grow past
    /// the threshold: memory is bounded by what is unread plus the threshold.
    @Test func consumedBytesAreDroppedPastTheThreshold() {
        var queue = ByteQueue(compactionThreshold: 1024)
        var out = [UInt8](repeating: 0, count: 100)
        var largest = 0
        for round in 0..<10_000 {
            queue.append(contentsOf: [UInt8](repeating: UInt8(truncatingIfNeeded: round), count: 100))
            if round > 0 {
                _ = out.withUnsafeMutableBytes { queue.read(into: $0) }
                #expect(out.allSatisfy { $0 == UInt8(truncatingIfNeeded: round - 1) })
            }
            largest = max(largest, queue.capacity)
        }
        #expect(queue.count == 100)
        #expect(largest < 4096)
    }

    @Test func consumingMoreThanIsUnreadEmptiesTheQueue() {
        var queue = ByteQueue()
        queue.append(contentsOf: [1, 2])
        queue.consume(10)
        #expect(queue.isEmpty && queue.count == 0)
        queue.append(contentsOf: [3])
        #expect(queue.withUnsafeReadableBytes { Array($0) } == [3])
    }
}
