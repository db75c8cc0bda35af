/// An ordered list of header fields, as received or to be sent.
///
/// Names keep the case they arrived in; look-ups compare names case-insensitively
/// (RFC 9110 §5.1). Order and duplicates are preserved, since a proxy must not merge
/// fields it does not understand.
package struct HTTPHeaders: Sendable, Equatable, Sequence {
    /// One header field.
    package struct Field: Sendable, Equatable {
        /// The field name, as received.
        package var name: String
        /// The field value with surrounding whitespace removed.
        package var value: String
    }

    private var fields: [Field] = []

    /// An empty header list.
    package init() {}

    /// A header list with `pairs` in order.
    package init(_ pairs: [(String, String)]) {
        self.fields = pairs.map { Field(name: $0.0, value: $0.1) }
    }

    /// Makes room for `count` fields, so that adding them one by one does not grow the
    /// storage step by step.
    package mutating func reserveCapacity(_ count: Int) {
        self.fields.reserveCapacity(count)
    }

    /// The number of fields, duplicates included.
    package var count: Int { self.fields.count }

    /// Appends a field.
    package mutating func add(name: String, value: String) {
        self.fields.append(Field(name: name, value: value))
    }

    /// Removes every field named `name` and appends one with `value`.
    package mutating func replaceOrAdd(name: String, value: String) {
        self.remove(name: name)
        self.add(name: name, value: value)
    }

    /// Removes every field named `name`.
    package mutating func remove(name: String) {
        self.fields.removeAll { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// Removes every field for whose name `shouldRemove` is true, in one pass.
    mutating func removeAll(named shouldRemove: (String) -> Bool) {
        self.fields.removeAll { shouldRemove($0.name) }
    }

    /// The values of every field named `name`, in order.
    package func values(_ name: String) -> [String] {
        self.fields.lazy.filter { $0.name.equalsIgnoringASCIICase(name) }.map(\.value)
    }

    /// The first value of the field named `name`.
    package func first(_ name: String) -> String? {
        self.fields.first { $0.name.equalsIgnoringASCIICase(name) }?.value
    }

    /// Whether any field is named `name`.
    package func contains(_ name: String) -> Bool {
        self.fields.contains { $0.name.equalsIgnoringASCIICase(name) }
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

    /// Iterates the fields in order.
    package func makeIterator() -> IndexingIterator<[Field]> {
        self.fields.makeIterator()
    }
}
