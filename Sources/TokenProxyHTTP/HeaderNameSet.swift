/// A fixed set of header names, looked up without lowercasing the name asked about. Names
/// of a length no member has are turned away by one bit test, which is most of the fields
/// of most messages.
package struct HeaderNameSet: Sendable {
    /// The members as bytes.
    private let names: [[UInt8]]
    /// Bit n is set when a member is n bytes long (names of 64 bytes or more share bit 63).
    private let lengths: UInt64

    package init(_ names: [String]) {
        self.names = names.map { Array($0.utf8) }
        self.lengths = names.reduce(0) { $0 | Self.bit($1.utf8.count) }
    }

    private static func bit(_ count: Int) -> UInt64 {
        1 << UInt64(min(count, 63))
    }

    /// Whether `name` is a member, ignoring ASCII case.
    func contains(_ name: some StringProtocol) -> Bool {
        guard self.lengths & Self.bit(name.utf8.count) != 0 else { return false }
        if let found = name.utf8.withContiguousStorageIfAvailable({ self.contains($0) }) {
            return found
        }
        return Array(name.utf8).withUnsafeBufferPointer { self.contains($0) }
    }

    /// Whether the name held as `bytes` is a member, ignoring ASCII case.
    package func contains(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard self.lengths & Self.bit(bytes.count) != 0 else { return false }
        return self.names.contains { ASCII.equalsIgnoringCase(bytes, $0) }
    }
}
