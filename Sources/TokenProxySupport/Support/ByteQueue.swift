/// Bytes appended at the back and consumed from the front, without moving the rest on
/// every read: the consumed prefix is dropped when the queue empties, or once it grows past
/// `compactionThreshold` bytes, so memory stays bounded by what is unread plus the
/// threshold. Used where a producer and a consumer run at their own pace (the request body
/// a transfer hands libcurl, a connection's input and output).
package struct ByteQueue {
    private var storage: [UInt8] = []
    private var readIndex = 0
    /// How many consumed bytes may stay in front before they are dropped.
    let compactionThreshold: Int

    /// An empty queue that drops consumed bytes past `compactionThreshold`.
    package init(compactionThreshold: Int = 64 * 1024) {
        self.compactionThreshold = compactionThreshold
    }

    /// The unread bytes.
    package var count: Int { self.storage.count - self.readIndex }

    /// Whether nothing is unread.
    package var isEmpty: Bool { self.readIndex == self.storage.count }

    /// The bytes of storage held, consumed ones included (tests bound memory with it).
    package var capacity: Int { self.storage.capacity }

    /// Appends `bytes` at the back.
    package mutating func append(contentsOf bytes: some Sequence<UInt8>) {
        self.storage.append(contentsOf: bytes)
    }

    // The buffers the request path appends, each as one copy. A call from another module to
    // the generic method above is not specialized there: it ran the standard library's
    // generic append, which looks up type metadata on every call.

    /// Appends `bytes` at the back.
    package mutating func append(contentsOf bytes: [UInt8]) {
        self.storage.append(contentsOf: bytes)
    }

    /// Appends `bytes` at the back.
    package mutating func append(contentsOf bytes: UnsafeBufferPointer<UInt8>) {
        self.storage.append(contentsOf: bytes)
    }

    /// Appends `bytes` at the back.
    package mutating func append(contentsOf bytes: UnsafeRawBufferPointer) {
        self.storage.append(contentsOf: bytes.assumingMemoryBound(to: UInt8.self))
    }

    /// Lets `body` append to the back in place (an encoder writing its framing around the
    /// bytes); it must not remove anything.
    package mutating func appending<Result>(_ body: (inout [UInt8]) throws -> Result) rethrows -> Result {
        try body(&self.storage)
    }

    /// Calls `body` with the unread bytes, in order.
    package func withUnsafeReadableBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try self.storage.withUnsafeBytes { raw in
            try body(UnsafeRawBufferPointer(rebasing: raw[self.readIndex...]))
        }
    }

    /// Copies up to `target.count` unread bytes into `target` and consumes them; returns how
    /// many.
    package mutating func read(into target: UnsafeMutableRawBufferPointer) -> Int {
        let count = min(self.count, target.count)
        guard count > 0 else { return 0 }
        self.storage.withUnsafeBytes { source in
            target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[self.readIndex..<self.readIndex + count]))
        }
        self.consume(count)
        return count
    }

    /// Drops the first `count` unread bytes (at most all of them).
    package mutating func consume(_ count: Int) {
        self.readIndex += min(max(count, 0), self.count)
        if self.readIndex == self.storage.count {
            self.storage.removeAll(keepingCapacity: true)
            self.readIndex = 0
        } else if self.readIndex > self.compactionThreshold {
            self.storage.removeFirst(self.readIndex)
            self.readIndex = 0
        }
    }

    /// Drops every byte; `keepingCapacity` as for arrays.
    package mutating func removeAll(keepingCapacity: Bool = false) {
        self.storage.removeAll(keepingCapacity: keepingCapacity)
        self.readIndex = 0
    }
}
