/// An ordered list of header fields, as received or to be sent.
///
/// Names keep the case they arrived in; look-ups compare names case-insensitively
/// (RFC 9110 §5.1). Order and duplicates are preserved, since a proxy must not merge
/// fields it does not understand.
///
/// The fields live as bytes in one buffer, each field a record in it, so that reading a head,
/// dropping fields from it and writing it out again makes no String per field: a name or
/// value becomes a String only when it is asked for (`docs/contributing/architecture.md`, "Header
/// fields as bytes").
package struct HTTPHeaders: Sendable, Equatable, Sequence {
    /// One header field, as Strings.
    package struct Field: Sendable, Equatable {
        /// The field name, as received.
        package var name: String
        /// The field value with surrounding whitespace removed.
        package var value: String
    }

    /// Each field is a record in `bytes`: a flag byte (``live`` or ``removed``), the name's
    /// and the value's lengths (4 bytes each, little-endian), then the name and the value. One
    /// buffer, so that a list costs one allocation, not one for the bytes and one for an
    /// index beside them.
    private static let recordHeader = 9
    private static let live: UInt8 = 0
    private static let removed: UInt8 = 1
    /// A field its producer keeps beside the list but out of it (``addWithheld(name:value:)``):
    /// only ``forEachWithheldField(_:)`` and ``forEachFieldIncludingWithheld(_:)`` see it.
    private static let withheld: UInt8 = 2

    /// The fields' records, back to back. A removed field's record stays in the buffer,
    /// flagged: fields are removed once per hop at most (hop-by-hop and withheld fields, a
    /// route's replacements), so the buffer stays within the head's size and what was added
    /// to it.
    private var bytes: [UInt8] = []
    /// The number of live fields.
    private var liveCount = 0
    /// Where the last field added (live or withheld) starts, while its record is the last in
    /// the buffer and not removed (``appendToLastValue(_:)`` extends it in place).
    private var lastRecord: Int?

    /// One record's place in the buffer.
    private struct Record {
        var start: Int
        var nameLength: Int
        var valueLength: Int

        var nameStart: Int { self.start + HTTPHeaders.recordHeader }
        var valueStart: Int { self.nameStart + self.nameLength }
        var end: Int { self.valueStart + self.valueLength }

        func name(in buffer: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(rebasing: buffer[self.nameStart..<self.valueStart])
        }

        func value(in buffer: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(rebasing: buffer[self.valueStart..<self.end])
        }
    }

    /// The record starting at `offset` of `buffer`, and whether it is live.
    private static func record(at offset: Int, in buffer: UnsafeBufferPointer<UInt8>) -> (Record, live: Bool) {
        let raw = UnsafeRawBufferPointer(buffer)
        let nameLength = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 1, as: UInt32.self)))
        let valueLength = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 5, as: UInt32.self)))
        return (Record(start: offset, nameLength: nameLength, valueLength: valueLength), buffer[offset] == Self.live)
    }

    /// Calls `body` with each live record, in order.
    private static func forEachLive(in buffer: UnsafeBufferPointer<UInt8>, _ body: (Record) -> Void) {
        Self.forEach(flagged: Self.live, in: buffer, body)
    }

    /// Calls `body` with each record flagged `flag`, in order.
    private static func forEach(flagged flag: UInt8, in buffer: UnsafeBufferPointer<UInt8>, _ body: (Record) -> Void) {
        Self.forEach(in: buffer, where: { $0 == flag }, body)
    }

    /// Calls `body` with each record whose flag `selected` accepts, in order.
    private static func forEach(
        in buffer: UnsafeBufferPointer<UInt8>,
        where selected: (UInt8) -> Bool,
        _ body: (Record) -> Void
    ) {
        var offset = 0
        while offset < buffer.count {
            let (record, _) = Self.record(at: offset, in: buffer)
            if selected(buffer[offset]) {
                body(record)
            }
            offset = record.end
        }
    }

    /// An empty header list.
    package init() {}

    /// A header list with `pairs` in order.
    package init(_ pairs: [(String, String)]) {
        self.reserveCapacity(pairs.count)
        for (name, value) in pairs {
            self.add(name: name, value: value)
        }
    }

    /// Makes room for `count` fields in all, so that adding them one by one does not grow the
    /// storage step by step (about 50 bytes for each field still to come).
    package mutating func reserveCapacity(_ count: Int) {
        self.bytes.reserveCapacity(self.bytes.count + Swift.max(0, count - self.liveCount) * 50)
    }

    /// The number of fields, duplicates included.
    package var count: Int { self.liveCount }

    /// At least the bytes the fields take written as `name: value` lines with their CRLFs,
    /// found without reading them: each field's record is that long or longer (its header of
    /// ``recordHeader`` bytes against the four of `": "` and CRLF), and a removed field's record
    /// still counts.
    package var encodedSizeBound: Int { self.bytes.count }

    /// Appends a record's header for a name and value of these lengths; returns its start.
    private mutating func appendRecordHeader(nameLength: Int, valueLength: Int, flag: UInt8) -> Int {
        let start = self.bytes.count
        let name = UInt32(truncatingIfNeeded: nameLength)
        let value = UInt32(truncatingIfNeeded: valueLength)
        // Nine bytes in one copy (a tuple of bytes has no padding).
        let header: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (
            flag,
            UInt8(truncatingIfNeeded: name), UInt8(truncatingIfNeeded: name >> 8),
            UInt8(truncatingIfNeeded: name >> 16), UInt8(truncatingIfNeeded: name >> 24),
            UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8),
            UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 24)
        )
        withUnsafeBytes(of: header) { self.append($0) }
        if flag == Self.live {
            self.liveCount += 1
        }
        return start
    }

    /// Appends `raw` to the buffer as one copy (an `UnsafeRawBufferPointer` is not contiguous
    /// storage to `Array.append(contentsOf:)`, which would copy it byte by byte).
    private mutating func append(_ raw: UnsafeRawBufferPointer) {
        self.bytes.append(contentsOf: raw.assumingMemoryBound(to: UInt8.self))
    }

    /// Appends a field.
    package mutating func add(name: String, value: String) {
        // Through the UTF-8 views' contiguous storage, which a native String has: no copy of
        // either String, and no byte-by-byte copy.
        let added: Void?? = name.utf8.withContiguousStorageIfAvailable { name in
            value.utf8.withContiguousStorageIfAvailable { value in
                self.appendRecord(name: UnsafeRawBufferPointer(name), value: UnsafeRawBufferPointer(value))
            }
        }
        if case .some(.some) = added { return }
        // A String bridged from elsewhere: `withUTF8` makes it native first.
        var name = name
        var value = value
        name.withUTF8 { name in
            value.withUTF8 { value in
                self.appendRecord(name: UnsafeRawBufferPointer(name), value: UnsafeRawBufferPointer(value))
            }
        }
    }

    /// Appends a field given as bytes, which the caller has checked (a token name, a value
    /// without CR, LF or NUL).
    package mutating func add(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        self.appendRecord(name: name, value: value)
    }

    /// Keeps a field in the buffer that is not part of the list: no reader of the list sees it
    /// (its count, look-ups, iteration, equality, an encoder), only
    /// ``forEachWithheldField(_:)`` and ``forEachFieldIncludingWithheld(_:)``. A response parser keeps the hop-by-hop and framing fields
    /// it reads but does not relay so, in the one buffer of the head, with no second
    /// allocation. An obs-fold right after it extends it (``appendToLastValue(_:)``).
    package mutating func addWithheld(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        self.appendRecord(name: name, value: value, flag: Self.withheld)
    }

    /// Calls `body` with each field's name and value bytes, live and withheld alike, in the
    /// order they were added; the buffers are valid during the call only.
    package func forEachFieldIncludingWithheld(
        _ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void
    ) {
        self.bytes.withUnsafeBufferPointer { buffer in
            Self.forEach(in: buffer, where: { $0 != Self.removed }) { record in
                body(record.name(in: buffer), record.value(in: buffer))
            }
        }
    }

    /// Calls `body` with each withheld field's name and value bytes, in order; the buffers are
    /// valid during the call only.
    package func forEachWithheldField(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) {
        self.bytes.withUnsafeBufferPointer { buffer in
            Self.forEach(flagged: Self.withheld, in: buffer) { record in
                body(record.name(in: buffer), record.value(in: buffer))
            }
        }
    }

    /// The largest record laid out in scratch memory before it is appended (scratch memory
    /// of up to this size is on the stack).
    private static let assembledRecordLimit = 1024

    /// Appends a record for `name` and `value`. A usual field's record is laid out in scratch
    /// memory on the stack and appended as one copy: the buffer's capacity and uniqueness are
    /// checked once per field, not once per part.
    private mutating func appendRecord(
        name: UnsafeRawBufferPointer,
        value: UnsafeRawBufferPointer,
        flag: UInt8 = HTTPHeaders.live
    ) {
        let total = Self.recordHeader + name.count + value.count
        guard total <= Self.assembledRecordLimit else {
            let start = self.appendRecordHeader(nameLength: name.count, valueLength: value.count, flag: flag)
            self.append(name)
            self.append(value)
            self.lastRecord = start
            return
        }
        let start = self.bytes.count
        withUnsafeTemporaryAllocation(byteCount: total, alignment: 1) { record in
            record.storeBytes(of: flag, as: UInt8.self)
            record.storeBytes(of: UInt32(truncatingIfNeeded: name.count).littleEndian, toByteOffset: 1, as: UInt32.self)
            record.storeBytes(
                of: UInt32(truncatingIfNeeded: value.count).littleEndian,
                toByteOffset: 5,
                as: UInt32.self
            )
            UnsafeMutableRawBufferPointer(rebasing: record[Self.recordHeader...]).copyMemory(from: name)
            UnsafeMutableRawBufferPointer(rebasing: record[(Self.recordHeader + name.count)...]).copyMemory(from: value)
            self.append(UnsafeRawBufferPointer(record))
        }
        if flag == Self.live {
            self.liveCount += 1
        }
        self.lastRecord = start
    }

    /// Appends `bytes` to the value of the last field (an obsolete line folding joined to it):
    /// the last one added, withheld or not, while its record ends the buffer; otherwise the
    /// last live one.
    package mutating func appendToLastValue(_ bytes: UnsafeRawBufferPointer) {
        if let start = self.lastRecord {
            // The last field's record ends the buffer: its value grows in place.
            let (record, _) = self.bytes.withUnsafeBufferPointer { Self.record(at: start, in: $0) }
            self.append(bytes)
            let length = UInt32(truncatingIfNeeded: record.valueLength + bytes.count).littleEndian
            withUnsafeBytes(of: length) { length in
                for index in 0..<4 {
                    self.bytes[start + 5 + index] = length[index]
                }
            }
            return
        }
        guard self.liveCount > 0 else { return }
        // Fields were removed after it: it moves to the end, with the bytes added.
        var last: Record?
        self.bytes.withUnsafeBufferPointer { buffer in
            Self.forEachLive(in: buffer) { last = $0 }
        }
        guard let last else { return }
        let name = Array(self.bytes[last.nameStart..<last.valueStart])
        let value = Array(self.bytes[last.valueStart..<last.end]) + Array(bytes)
        self.bytes[last.start] = Self.removed
        self.liveCount -= 1
        name.withUnsafeBytes { name in
            value.withUnsafeBytes { value in self.add(name: name, value: value) }
        }
    }

    /// Removes every field named `name` and appends one with `value`.
    package mutating func replaceOrAdd(name: String, value: String) {
        self.remove(name: name)
        self.add(name: name, value: value)
    }

    /// Removes every field named `name`.
    package mutating func remove(name: String) {
        self.removeAll { Self.name($0, equals: name) }
    }

    /// Removes every field for whose name and value `shouldRemove` is true, in one pass.
    package mutating func removeAll(
        where shouldRemove: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Bool
    ) {
        var removed = 0
        var lastRemoved = false
        let last = self.lastRecord
        self.bytes.withUnsafeMutableBufferPointer { buffer in
            let readable = UnsafeBufferPointer(buffer)
            Self.forEachLive(in: readable) { record in
                if shouldRemove(record.name(in: readable), record.value(in: readable)) {
                    buffer[record.start] = Self.removed
                    removed += 1
                    lastRemoved = lastRemoved || record.start == last
                }
            }
        }
        guard removed > 0 else { return }
        self.liveCount -= removed
        if lastRemoved {
            // The last field added is gone: a fold goes to the last live one
            // (``appendToLastValue(_:)``). A withheld field that ends the buffer stays the last.
            self.lastRecord = nil
        }
    }

    /// Gives each field for which `transform` returns a value that value instead; the field
    /// keeps its name and its place in the list.
    package mutating func replaceValues(
        _ transform: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> String?
    ) {
        var replacements: [(start: Int, value: String)] = []
        self.bytes.withUnsafeBufferPointer { buffer in
            Self.forEachLive(in: buffer) { record in
                if let value = transform(record.name(in: buffer), record.value(in: buffer)) {
                    replacements.append((record.start, value))
                }
            }
        }
        guard !replacements.isEmpty else { return }
        // Rare (a Location rewritten): the list is written anew, in order.
        var rebuilt = HTTPHeaders()
        rebuilt.bytes.reserveCapacity(self.bytes.count + replacements.reduce(0) { $0 + $1.value.utf8.count })
        var next = 0
        self.bytes.withUnsafeBufferPointer { buffer in
            Self.forEachLive(in: buffer) { record in
                let name = UnsafeRawBufferPointer(record.name(in: buffer))
                if next < replacements.count, replacements[next].start == record.start {
                    var value = replacements[next].value
                    next += 1
                    value.withUTF8 { rebuilt.add(name: name, value: UnsafeRawBufferPointer($0)) }
                } else {
                    rebuilt.add(name: name, value: UnsafeRawBufferPointer(record.value(in: buffer)))
                }
            }
        }
        self = rebuilt
    }

    /// Removes every field for whose name `shouldRemove` is true, in one pass.
    package mutating func removeAll(named shouldRemove: (UnsafeBufferPointer<UInt8>) -> Bool) {
        self.removeAll { name, _ in shouldRemove(name) }
    }

    /// Calls `body` with each field's name and value bytes, in order; the buffers are valid
    /// during the call only.
    package func forEachField(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) {
        self.bytes.withUnsafeBufferPointer { buffer in
            Self.forEachLive(in: buffer) { record in
                body(record.name(in: buffer), record.value(in: buffer))
            }
        }
    }

    /// The values of every field named `name`, in order.
    package func values(_ name: String) -> [String] {
        var found: [String] = []
        self.forEachField { fieldName, value in
            if Self.name(fieldName, equals: name) {
                found.append(String(decoding: value, as: UTF8.self))
            }
        }
        return found
    }

    /// The first value of the field named `name`.
    package func first(_ name: String) -> String? {
        self.bytes.withUnsafeBufferPointer { buffer in
            var offset = 0
            while offset < buffer.count {
                let (record, live) = Self.record(at: offset, in: buffer)
                if live, Self.name(record.name(in: buffer), equals: name) {
                    return String(decoding: record.value(in: buffer), as: UTF8.self)
                }
                offset = record.end
            }
            return nil
        }
    }

    /// Whether any field is named `name`.
    package func contains(_ name: String) -> Bool {
        self.bytes.withUnsafeBufferPointer { buffer in
            var offset = 0
            while offset < buffer.count {
                let (record, live) = Self.record(at: offset, in: buffer)
                if live, Self.name(record.name(in: buffer), equals: name) {
                    return true
                }
                offset = record.end
            }
            return false
        }
    }

    /// The comma-separated list elements of every field named `name`, trimmed, lowercased,
    /// empty elements dropped (RFC 9110 §5.6.1).
    package func tokens(_ name: String) -> [String] {
        self.values(name).flatMap { value in
            value.split(separator: ",").compactMap { element -> String? in
                let trimmed = element.trimmingHTTPWhitespace()
                return trimmed.isEmpty ? nil : trimmed.lowercased()
            }
        }
    }

    /// Whether the field name `bytes` is the lowercase literal `name`, ignoring ASCII case:
    /// the literal's bytes are compared where they lie, with no String to open.
    package static func name(_ bytes: UnsafeBufferPointer<UInt8>, is name: StaticString) -> Bool {
        guard bytes.count == name.utf8CodeUnitCount else { return false }
        return ASCII.equalsIgnoringCase(
            bytes,
            UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        )
    }

    /// Whether the field name `bytes` is `name`, ignoring ASCII case.
    package static func name(_ bytes: UnsafeBufferPointer<UInt8>, equals name: String) -> Bool {
        // Most names differ in length: that is one comparison, before any byte is read.
        guard bytes.count == name.utf8.count else { return false }
        if let equal = name.utf8.withContiguousStorageIfAvailable({ ASCII.equalsIgnoringCase(bytes, $0) }) {
            return equal
        }
        return ASCII.equalsIgnoringCase(bytes, Array(name.utf8))
    }

    /// Lists are equal when they hold the same fields, byte for byte, in the same order.
    package static func == (lhs: Self, rhs: Self) -> Bool {
        guard lhs.liveCount == rhs.liveCount else { return false }
        return lhs.bytes.withUnsafeBufferPointer { left in
            rhs.bytes.withUnsafeBufferPointer { right in
                var leftOffset = 0
                var rightOffset = 0
                while true {
                    guard let a = Self.nextLive(from: &leftOffset, in: left) else {
                        return Self.nextLive(from: &rightOffset, in: right) == nil
                    }
                    guard let b = Self.nextLive(from: &rightOffset, in: right),
                        a.name(in: left).elementsEqual(b.name(in: right)),
                        a.value(in: left).elementsEqual(b.value(in: right))
                    else { return false }
                }
            }
        }
    }

    /// The first live record at or after `offset`, moving `offset` past it; nil at the end.
    private static func nextLive(from offset: inout Int, in buffer: UnsafeBufferPointer<UInt8>) -> Record? {
        while offset < buffer.count {
            let (record, live) = Self.record(at: offset, in: buffer)
            offset = record.end
            if live {
                return record
            }
        }
        return nil
    }

    /// Iterates the fields in order, each made into Strings as it is reached.
    package func makeIterator() -> Iterator {
        Iterator(headers: self)
    }

    /// Yields the fields in order as ``Field``s.
    package struct Iterator: IteratorProtocol {
        fileprivate let headers: HTTPHeaders
        private var offset = 0

        fileprivate init(headers: HTTPHeaders) {
            self.headers = headers
        }

        /// The next field, or nil after the last.
        package mutating func next() -> Field? {
            self.headers.bytes.withUnsafeBufferPointer { buffer in
                guard let record = HTTPHeaders.nextLive(from: &self.offset, in: buffer) else { return nil }
                return Field(
                    name: String(decoding: record.name(in: buffer), as: UTF8.self),
                    value: String(decoding: record.value(in: buffer), as: UTF8.self)
                )
            }
        }
    }
}
