/// Writes a head's bytes into memory whose size was counted, or bounded, first, so that a
/// head goes into its buffer as one copy instead of one append per part, each with its own
/// check of the buffer's capacity and uniqueness. Every write is bounds-checked against that
/// size: a count below what is written is a programming error and stops the process, as an
/// array index out of range would. ``written`` tells how much of the memory holds the head.
struct HeadWriter {
    private let memory: UnsafeMutableRawBufferPointer
    private(set) var written = 0

    init(_ memory: UnsafeMutableRawBufferPointer) {
        self.memory = memory
    }

    /// The memory still free.
    private var rest: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(rebasing: self.memory[self.written...])
    }

    mutating func write(_ bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count <= self.memory.count - self.written, "a head outgrew its counted size")
        self.rest.copyMemory(from: bytes)
        self.written += bytes.count
    }

    mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.write(UnsafeRawBufferPointer(bytes))
    }

    mutating func write(_ text: StaticString) {
        self.write(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func write(_ byte: UInt8) {
        precondition(self.written < self.memory.count, "a head outgrew its counted size")
        self.memory[self.written] = byte
        self.written += 1
    }

    /// The digits of a non-negative `value` in `radix` (10 or 16).
    mutating func writeDigits(_ value: Int64, radix: Int64 = 10) {
        var scale: Int64 = 1
        for _ in 1..<Self.digitCount(value, radix: radix) {
            scale *= radix
        }
        var remaining = value
        while scale > 0 {
            let digit = UInt8(truncatingIfNeeded: remaining / scale)
            self.write(digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10)
            remaining %= scale
            scale /= radix
        }
    }

    /// How many digits ``writeDigits(_:radix:)`` writes for `value`.
    static func digitCount(_ value: Int64, radix: Int64 = 10) -> Int {
        var count = 1
        var rest = value
        while rest >= radix {
            rest /= radix
            count += 1
        }
        return count
    }
}
