/// An ordered list of header fields, as received or to be sent.
///
/// Names keep the case they arrived in; look-ups compare names case-insensitively
/// (RFC 9110 §5.1). Order and duplicates are preserved, since a proxy must not merge
/// fields it does not understand.
public struct HTTPHeaders: Sendable, Equatable, Sequence {
    /// One header field.
    public struct Field: Sendable, Equatable {
        /// The field name, as received.
        public var name: String
        /// The field value with surrounding whitespace removed.
        public var value: String
    }

    private var fields: [Field] = []

    /// An empty header list.
    public init() {}

    /// A header list with `pairs` in order.
    public init(_ pairs: [(String, String)]) {
        self.fields = pairs.map { Field(name: $0.0, value: $0.1) }
    }

    /// Makes room for `count` fields, so that adding them one by one does not grow the
    /// storage step by step.
    public mutating func reserveCapacity(_ count: Int) {
        self.fields.reserveCapacity(count)
    }

    /// The number of fields, duplicates included.
    public var count: Int { self.fields.count }

    /// Appends a field.
    public mutating func add(name: String, value: String) {
        self.fields.append(Field(name: name, value: value))
    }

    /// Removes every field named `name` and appends one with `value`.
    public mutating func replaceOrAdd(name: String, value: String) {
        self.remove(name: name)
        self.add(name: name, value: value)
    }

    /// Removes every field named `name`.
    public mutating func remove(name: String) {
        self.fields.removeAll { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// Removes every field for whose name `shouldRemove` is true, in one pass.
    mutating func removeAll(named shouldRemove: (String) -> Bool) {
        self.fields.removeAll { shouldRemove($0.name) }
    }

    /// The values of every field named `name`, in order.
    public func values(_ name: String) -> [String] {
        self.fields.lazy.filter { $0.name.equalsIgnoringASCIICase(name) }.map(\.value)
    }

    /// The first value of the field named `name`.
    public func first(_ name: String) -> String? {
        self.fields.first { $0.name.equalsIgnoringASCIICase(name) }?.value
    }

    /// Whether any field is named `name`.
    public func contains(_ name: String) -> Bool {
        self.fields.contains { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// The comma-separated list elements of every field named `name`, trimmed, lowercased,
    /// empty elements dropped (RFC 9110 §5.6.1).
    public func tokens(_ name: String) -> [String] {
        self.values(name).flatMap { value in
            value.split(separator: ",").compactMap { element -> String? in
                let trimmed = element.trimmingHTTPWhitespace()
                return trimmed.isEmpty ? nil : trimmed.lowercased()
            }
        }
    }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[Field]> {
        self.fields.makeIterator()
    }
}

/// A fixed set of header names, looked up without lowercasing the name asked about. Names
/// of a length no member has are turned away by one bit test, which is most of the fields
/// of most messages.
struct HeaderNameSet: Sendable {
    private let names: [String]
    /// Bit n is set when a member is n bytes long (names of 64 bytes or more share bit 63).
    private let lengths: UInt64

    init(_ names: [String]) {
        self.names = names
        self.lengths = names.reduce(0) { $0 | Self.bit($1.utf8.count) }
    }

    private static func bit(_ count: Int) -> UInt64 {
        1 << UInt64(min(count, 63))
    }

    /// Whether `name` is a member, ignoring ASCII case.
    func contains(_ name: some StringProtocol) -> Bool {
        guard self.lengths & Self.bit(name.utf8.count) != 0 else { return false }
        return self.names.contains { name.equalsIgnoringASCIICase($0) }
    }
}

extension StringProtocol {
    /// Compares two strings ignoring the case of ASCII letters only, as header names and
    /// tokens are compared (RFC 9110 §5.1).
    func equalsIgnoringASCIICase(_ other: some StringProtocol) -> Bool {
        let a = self.utf8
        let b = other.utf8
        guard a.count == b.count else { return false }
        // Native strings expose their bytes: compare those directly, since this runs for
        // header fields of every request and response.
        let fast = a.withContiguousStorageIfAvailable { x in
            b.withContiguousStorageIfAvailable { y in Self.equalsIgnoringASCIICase(x, y) }
        }
        if let fast, let result = fast {
            return result
        }
        return Self.equalsIgnoringASCIICase(Array(a), Array(b))
    }

    private static func equalsIgnoringASCIICase(
        _ x: some RandomAccessCollection<UInt8>,
        _ y: some RandomAccessCollection<UInt8>
    ) -> Bool {
        guard x.count == y.count else { return false }
        var i = x.startIndex
        var j = y.startIndex
        while i != x.endIndex {
            let left = x[i]
            let right = y[j]
            if left != right {
                let folded = left | 0x20
                guard folded == right | 0x20, folded >= UInt8(ascii: "a"), folded <= UInt8(ascii: "z") else {
                    return false
                }
            }
            x.formIndex(after: &i)
            y.formIndex(after: &j)
        }
        return true
    }

    /// The string without leading and trailing spaces and horizontal tabs (RFC 9110 OWS).
    func trimmingHTTPWhitespace() -> String {
        let isOWS: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = self.firstIndex(where: { !isOWS($0) }),
            let end = self.lastIndex(where: { !isOWS($0) })
        else { return "" }
        return String(self[start...end])
    }
}
