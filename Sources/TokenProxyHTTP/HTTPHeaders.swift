/// An ordered list of header fields, as received or to be sent.
///
/// Names keep the case they arrived in; look-ups compare names case-insensitively
/// (RFC 9110 §5.1). Order and duplicates are preserved, since a proxy must not merge
/// fields it does not understand.
///
/// The fields live as bytes in one buffer, each field two ranges into it, so that reading a
/// head, dropping fields from it and writing it out again makes no String per field: a name
/// or value becomes a String only when it is asked for (`docs/contributing/architecture.md`, "Header
/// fields as bytes").
package struct HTTPHeaders: Sendable, Equatable, Sequence {
    /// One header field, as Strings.
    package struct Field: Sendable, Equatable {
        /// The field name, as received.
        package var name: String
        /// The field value with surrounding whitespace removed.
        package var value: String
    }

    /// Where one field's name and value lie in `bytes`.
    private struct Span: Sendable {
        var nameStart: Int
        var nameEnd: Int
        var valueStart: Int
        var valueEnd: Int

        func name(in buffer: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(rebasing: buffer[self.nameStart..<self.nameEnd])
        }

        func value(in buffer: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
            UnsafeBufferPointer(rebasing: buffer[self.valueStart..<self.valueEnd])
        }
    }

    /// Names and values, back to back. A removed field's bytes stay in the buffer: fields are
    /// removed once per hop at most (hop-by-hop and withheld fields, a route's replacements),
    /// so the buffer stays within the head's size and what was added to it.
    private var bytes: [UInt8] = []
    private var spans: [Span] = []

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
    /// storage step by step (about 40 bytes for each field still to come).
    package mutating func reserveCapacity(_ count: Int) {
        self.bytes.reserveCapacity(self.bytes.count + Swift.max(0, count - self.spans.count) * 40)
        self.spans.reserveCapacity(count)
    }

    /// The number of fields, duplicates included.
    package var count: Int { self.spans.count }

    /// Appends a field.
    package mutating func add(name: String, value: String) {
        let nameStart = self.bytes.count
        self.bytes.append(contentsOf: name.utf8)
        let valueStart = self.bytes.count
        self.bytes.append(contentsOf: value.utf8)
        self.appendSpan(nameStart: nameStart, valueStart: valueStart)
    }

    /// Appends a field given as bytes, which the caller has checked (a token name, a value
    /// without CR, LF or NUL).
    package mutating func add(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let nameStart = self.bytes.count
        self.bytes.append(contentsOf: name)
        let valueStart = self.bytes.count
        self.bytes.append(contentsOf: value)
        self.appendSpan(nameStart: nameStart, valueStart: valueStart)
    }

    /// Records the field whose name starts at `nameStart` and whose value runs from
    /// `valueStart` to the end of the buffer.
    private mutating func appendSpan(nameStart: Int, valueStart: Int) {
        self.spans.append(
            Span(nameStart: nameStart, nameEnd: valueStart, valueStart: valueStart, valueEnd: self.bytes.count)
        )
    }

    /// Appends `bytes` to the value of the last field (an obsolete line folding joined to it).
    package mutating func appendToLastValue(_ bytes: UnsafeRawBufferPointer) {
        guard var last = self.spans.popLast() else { return }
        if last.valueEnd != self.bytes.count {
            // The last value is not at the end of the buffer: move it there first.
            let value = Array(self.bytes[last.valueStart..<last.valueEnd])
            last.valueStart = self.bytes.count
            self.bytes.append(contentsOf: value)
        }
        self.bytes.append(contentsOf: bytes)
        last.valueEnd = self.bytes.count
        self.spans.append(last)
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
        let bytes = self.bytes
        bytes.withUnsafeBufferPointer { buffer in
            self.spans.removeAll { shouldRemove($0.name(in: buffer), $0.value(in: buffer)) }
        }
    }

    /// Gives each field for which `transform` returns a value that value instead; the field
    /// keeps its name and its place in the list.
    package mutating func replaceValues(
        _ transform: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> String?
    ) {
        var replacements: [(index: Int, value: String)] = []
        self.bytes.withUnsafeBufferPointer { buffer in
            for (index, span) in self.spans.enumerated() {
                if let value = transform(span.name(in: buffer), span.value(in: buffer)) {
                    replacements.append((index, value))
                }
            }
        }
        for (index, value) in replacements {
            let start = self.bytes.count
            self.bytes.append(contentsOf: value.utf8)
            self.spans[index].valueStart = start
            self.spans[index].valueEnd = self.bytes.count
        }
    }

    /// Removes every field for whose name `shouldRemove` is true, in one pass.
    package mutating func removeAll(named shouldRemove: (UnsafeBufferPointer<UInt8>) -> Bool) {
        let bytes = self.bytes
        bytes.withUnsafeBufferPointer { buffer in
            self.spans.removeAll { shouldRemove($0.name(in: buffer)) }
        }
    }

    /// Calls `body` with each field's name and value bytes, in order; the buffers are valid
    /// during the call only.
    package func forEachField(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) {
        self.bytes.withUnsafeBufferPointer { buffer in
            for span in self.spans {
                body(span.name(in: buffer), span.value(in: buffer))
            }
        }
    }

    /// The values of every field named `name`, in order.
    package func values(_ name: String) -> [String] {
        var found: [String] = []
        self.bytes.withUnsafeBufferPointer { buffer in
            for span in self.spans where Self.name(span.name(in: buffer), equals: name) {
                found.append(String(decoding: span.value(in: buffer), as: UTF8.self))
            }
        }
        return found
    }

    /// The first value of the field named `name`.
    package func first(_ name: String) -> String? {
        self.bytes.withUnsafeBufferPointer { buffer in
            for span in self.spans where Self.name(span.name(in: buffer), equals: name) {
                return String(decoding: span.value(in: buffer), as: UTF8.self)
            }
            return nil
        }
    }

    /// Whether any field is named `name`.
    package func contains(_ name: String) -> Bool {
        self.bytes.withUnsafeBufferPointer { buffer in
            self.spans.contains { Self.name($0.name(in: buffer), equals: name) }
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
        guard lhs.spans.count == rhs.spans.count else { return false }
        return lhs.bytes.withUnsafeBufferPointer { left in
            rhs.bytes.withUnsafeBufferPointer { right in
                zip(lhs.spans, rhs.spans).allSatisfy { a, b in
                    a.name(in: left).elementsEqual(b.name(in: right))
                        && a.value(in: left).elementsEqual(b.value(in: right))
                }
            }
        }
    }

    /// Iterates the fields in order, each made into Strings as it is reached.
    package func makeIterator() -> Iterator {
        Iterator(headers: self)
    }

    /// Yields the fields in order as ``Field``s.
    package struct Iterator: IteratorProtocol {
        fileprivate let headers: HTTPHeaders
        private var index = 0

        fileprivate init(headers: HTTPHeaders) {
            self.headers = headers
        }

        /// The next field, or nil after the last.
        package mutating func next() -> Field? {
            guard self.index < self.headers.spans.count else { return nil }
            let span = self.headers.spans[self.index]
            self.index += 1
            let bytes = self.headers.bytes
            return Field(
                name: String(decoding: bytes[span.nameStart..<span.nameEnd], as: UTF8.self),
                value: String(decoding: bytes[span.valueStart..<span.valueEnd], as: UTF8.self)
            )
        }
    }
}
