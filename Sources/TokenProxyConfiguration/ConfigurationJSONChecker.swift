import Foundation

/// A strict RFC 8259 syntax check run before decoding, for what `JSONDecoder` does not say:
/// where a syntax error is (line and column), trailing commas (which it accepts), and
/// duplicate keys (of which it silently keeps one; a duplicate is a typo-class mistake).
///
/// Messages describe the expected syntax and never quote the document, which may hold secrets.
struct ConfigurationJSONChecker {
    /// The result of a check.
    struct Outcome {
        /// The first syntax error, which makes the document unusable, if any.
        var error: ConfigurationProblem?
        /// One problem per duplicated key, at the key's path.
        var duplicateKeys: [ConfigurationProblem] = []
    }

    /// Nesting deeper than this is refused (a configuration needs about five levels).
    static let maxDepth = 64

    private struct SyntaxError: Error {
        var offset: Int
        var message: String
    }

    private enum Component {
        case key(String)
        case index(Int)
    }

    private let bytes: [UInt8]
    private var offset = 0
    private var path: [Component] = []
    private var duplicates: [ConfigurationProblem] = []

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Checks `data`.
    static func check(_ data: Data) -> Outcome {
        if String(data: data, encoding: .utf8) == nil {
            return Outcome(error: ConfigurationProblem(path: "", message: "invalid JSON: the file is not valid UTF-8"))
        }
        var checker = ConfigurationJSONChecker(bytes: Array(data))
        do {
            try checker.document()
            return Outcome(error: nil, duplicateKeys: checker.duplicates)
        } catch {
            let (line, column) = checker.position(of: error.offset)
            let message = "invalid JSON at line \(line), column \(column): \(error.message)"
            return Outcome(error: ConfigurationProblem(path: "", message: message))
        }
    }

    private var current: UInt8? {
        self.offset < self.bytes.count ? self.bytes[self.offset] : nil
    }

    private mutating func document() throws(SyntaxError) {
        if self.bytes.starts(with: [0xEF, 0xBB, 0xBF]) { self.offset = 3 }
        self.skipWhitespace()
        if self.current == nil {
            throw SyntaxError(offset: self.offset, message: "the document is empty; expected an object")
        }
        try self.value(depth: 0)
        self.skipWhitespace()
        if self.current != nil {
            throw SyntaxError(offset: self.offset, message: "unexpected content after the end of the document")
        }
    }

    private mutating func value(depth: Int) throws(SyntaxError) {
        guard depth < Self.maxDepth else {
            throw SyntaxError(offset: self.offset, message: "nested more than \(Self.maxDepth) levels deep")
        }
        guard let byte = self.current else {
            throw SyntaxError(offset: self.offset, message: "unexpected end of the document; expected a value")
        }
        switch byte {
        case UInt8(ascii: "{"): try self.object(depth: depth + 1)
        case UInt8(ascii: "["): try self.array(depth: depth + 1)
        case UInt8(ascii: "\""): _ = try self.string()
        case UInt8(ascii: "t"): try self.literal("true")
        case UInt8(ascii: "f"): try self.literal("false")
        case UInt8(ascii: "n"): try self.literal("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try self.number()
        default: throw SyntaxError(offset: self.offset, message: "expected a value\(Self.hint(byte))")
        }
    }

    private mutating func object(depth: Int) throws(SyntaxError) {
        self.offset += 1
        self.skipWhitespace()
        if self.current == UInt8(ascii: "}") {
            self.offset += 1
            return
        }
        var keys: Set<String> = []
        while true {
            guard self.current == UInt8(ascii: "\"") else {
                throw SyntaxError(offset: self.offset, message: "expected a key in double quotes")
            }
            let key = try self.string()
            if !keys.insert(key).inserted {
                let keyPath = self.pathString(appending: .key(key))
                self.duplicates.append(ConfigurationProblem(path: keyPath, message: "duplicate key"))
            }
            self.skipWhitespace()
            try self.expect(UInt8(ascii: ":"), "expected ':' after the key")
            self.skipWhitespace()
            self.path.append(.key(key))
            try self.value(depth: depth)
            self.path.removeLast()
            self.skipWhitespace()
            if self.current == UInt8(ascii: "}") {
                self.offset += 1
                return
            }
            try self.expect(UInt8(ascii: ","), "expected ',' or '}' after an object member")
            self.skipWhitespace()
            if self.current == UInt8(ascii: "}") {
                throw SyntaxError(offset: self.offset, message: "trailing comma before '}'")
            }
        }
    }

    private mutating func array(depth: Int) throws(SyntaxError) {
        self.offset += 1
        self.skipWhitespace()
        if self.current == UInt8(ascii: "]") {
            self.offset += 1
            return
        }
        var index = 0
        while true {
            self.path.append(.index(index))
            try self.value(depth: depth)
            self.path.removeLast()
            index += 1
            self.skipWhitespace()
            if self.current == UInt8(ascii: "]") {
                self.offset += 1
                return
            }
            try self.expect(UInt8(ascii: ","), "expected ',' or ']' after a list element")
            self.skipWhitespace()
            if self.current == UInt8(ascii: "]") {
                throw SyntaxError(offset: self.offset, message: "trailing comma before ']'")
            }
        }
    }

    /// Reads a string (RFC 8259 §7) and returns its decoded value.
    private mutating func string() throws(SyntaxError) -> String {
        self.offset += 1
        var scalars = String.UnicodeScalarView()
        var pending: [UInt8] = []
        func flush() {
            scalars.append(contentsOf: String(decoding: pending, as: UTF8.self).unicodeScalars)
            pending.removeAll()
        }
        while let byte = self.current {
            switch byte {
            case UInt8(ascii: "\""):
                self.offset += 1
                flush()
                return String(scalars)
            case UInt8(ascii: "\\"):
                flush()
                let start = self.offset
                self.offset += 1
                guard let escaped = self.current else { break }
                self.offset += 1
                switch escaped {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"): scalars.append(try self.unicodeEscape(start: start))
                default: throw SyntaxError(offset: start, message: "invalid escape sequence in a string")
                }
            case 0..<0x20:
                throw SyntaxError(
                    offset: self.offset,
                    message: "control character in a string (write newlines and tabs as \\n and \\t)"
                )
            default:
                pending.append(byte)
                self.offset += 1
            }
        }
        throw SyntaxError(offset: self.offset, message: "unterminated string")
    }

    /// The scalar of `\uXXXX` (after the `u`), combining a UTF-16 surrogate pair.
    private mutating func unicodeEscape(start: Int) throws(SyntaxError) -> Unicode.Scalar {
        let invalid = SyntaxError(offset: start, message: "invalid \\u escape in a string")
        let high = try self.hex4(invalid)
        if (0xD800..<0xDC00).contains(high) {
            guard self.current == UInt8(ascii: "\\"), self.offset + 1 < self.bytes.count,
                self.bytes[self.offset + 1] == UInt8(ascii: "u")
            else { throw invalid }
            self.offset += 2
            let low = try self.hex4(invalid)
            guard (0xDC00..<0xE000).contains(low) else { throw invalid }
            let value = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
            guard let scalar = Unicode.Scalar(value) else { throw invalid }
            return scalar
        }
        guard let scalar = Unicode.Scalar(high) else { throw invalid }
        return scalar
    }

    private mutating func hex4(_ invalid: SyntaxError) throws(SyntaxError) -> UInt32 {
        guard self.offset + 4 <= self.bytes.count,
            let value = UInt32(String(decoding: self.bytes[self.offset..<self.offset + 4], as: UTF8.self), radix: 16),
            self.bytes[self.offset..<self.offset + 4].allSatisfy({ $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "-") })
        else { throw invalid }
        self.offset += 4
        return value
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?` (RFC 8259 §6).
    private mutating func number() throws(SyntaxError) {
        let start = self.offset
        let invalid = SyntaxError(offset: start, message: "invalid number")
        if self.current == UInt8(ascii: "-") { self.offset += 1 }
        if self.current == UInt8(ascii: "0") {
            self.offset += 1
            if self.isDigit(self.current) {
                throw SyntaxError(offset: start, message: "invalid number (no leading zeros)")
            }
        } else if !self.skipDigits() {
            throw invalid
        }
        if self.current == UInt8(ascii: ".") {
            self.offset += 1
            guard self.skipDigits() else { throw invalid }
        }
        if self.current == UInt8(ascii: "e") || self.current == UInt8(ascii: "E") {
            self.offset += 1
            if self.current == UInt8(ascii: "+") || self.current == UInt8(ascii: "-") { self.offset += 1 }
            guard self.skipDigits() else { throw invalid }
        }
    }

    private func isDigit(_ byte: UInt8?) -> Bool {
        byte.map { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } ?? false
    }

    /// Skips digits; whether there was at least one.
    private mutating func skipDigits() -> Bool {
        let start = self.offset
        while self.isDigit(self.current) { self.offset += 1 }
        return self.offset > start
    }

    private mutating func literal(_ word: String) throws(SyntaxError) {
        let expected = Array(word.utf8)
        guard self.bytes[self.offset...].starts(with: expected) else {
            throw SyntaxError(offset: self.offset, message: "expected a value (strings need double quotes)")
        }
        self.offset += expected.count
    }

    private mutating func expect(_ byte: UInt8, _ message: String) throws(SyntaxError) {
        guard self.current == byte else { throw SyntaxError(offset: self.offset, message: message) }
        self.offset += 1
    }

    private mutating func skipWhitespace() {
        while let byte = self.current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
            self.offset += 1
        }
    }

    /// A hint about an unexpected byte, naming it only when it is JSON punctuation.
    private static func hint(_ byte: UInt8) -> String {
        if "{}[]:,".utf8.contains(byte) { return ", found '\(Character(Unicode.Scalar(byte)))'" }
        if byte == UInt8(ascii: "'") { return " (strings need double quotes)" }
        if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "#") { return " (JSON has no comments)" }
        if (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
        {
            return " (strings need double quotes)"
        }
        return ""
    }

    /// 1-based line and column (in characters) of a byte offset.
    private func position(of offset: Int) -> (line: Int, column: Int) {
        var line = 1
        var column = 1
        for byte in self.bytes[0..<min(offset, self.bytes.count)] {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return (line, column)
    }

    private func pathString(appending last: Component) -> String {
        var path = ""
        for component in self.path + [last] {
            switch component {
            case .key(let key): path = ConfigurationPath.join(path, key)
            case .index(let index): path = ConfigurationPath.index(path, index)
            }
        }
        return path
    }
}
