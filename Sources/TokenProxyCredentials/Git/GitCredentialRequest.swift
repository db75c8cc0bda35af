/// The attributes git writes to a credential helper's stdin (git-credential(1), "Input/Output
/// Format"): one `key=value` per line, ended by a blank line or the end of input. Values are
/// kept as git sent them; keys ending in `[]` (`capability[]`) may repeat.
package struct GitCredentialRequest: Sendable, Equatable {
    /// Why the input was refused.
    package enum ParseError: Error, Equatable, CustomStringConvertible {
        /// More than ``maxBytes`` bytes before the terminating blank line.
        case tooLarge
        /// More than ``maxLines`` lines.
        case tooManyLines
        /// A NUL byte: git never sends one (git-credential(1)).
        case nul
        /// Not UTF-8.
        case notUTF8
        /// A line without `=`, which git itself refuses.
        case malformedLine(Int)

        /// The message for stderr (never a value: it may be a password).
        package var description: String {
            switch self {
            case .tooLarge: "credential input is larger than \(GitCredentialRequest.maxBytes) bytes"
            case .tooManyLines: "credential input has more than \(GitCredentialRequest.maxLines) lines"
            case .nul: "credential input contains a NUL byte"
            case .notUTF8: "credential input is not UTF-8"
            case .malformedLine(let line): "credential input line \(line) has no '='"
            }
        }
    }

    /// The most input read: git's attributes are a few short lines.
    package static let maxBytes = 64 * 1024
    /// The most lines read.
    package static let maxLines = 256

    /// Single-valued attributes; a repeated key keeps its last value, as git does.
    package var attributes: [String: String]
    /// `capability[]` values (`authtype`, `state`).
    package var capabilities: [String]

    /// Creates a request from already split attributes (tests, `--provider` use).
    package init(attributes: [String: String] = [:], capabilities: [String] = []) {
        self.attributes = attributes
        self.capabilities = capabilities
    }

    /// `protocol`: `https`, `http`, …
    package var scheme: String? { self.attributes["protocol"] }
    /// `host`: the host name, with `:port` when the URL has one.
    package var host: String? { self.attributes["host"] }
    /// `path`: sent only with `credential.useHttpPath` (no leading `/`).
    package var path: String? { self.attributes["path"] }
    /// The secret git sends back with `erase`: `password`, or `credential` with `authtype`.
    package var secret: String? { self.attributes["password"] ?? self.attributes["credential"] }
    /// Whether git can take `authtype`/`credential` (git-credential(1), "capability[]").
    package var acceptsAuthtype: Bool { self.capabilities.contains("authtype") }

    /// Parses `input`: everything up to the first empty line (or the end). Input past the
    /// blank line is ignored, and a line's trailing CR is dropped as git does.
    package static func parse(_ input: [UInt8]) throws(ParseError) -> GitCredentialRequest {
        var request = GitCredentialRequest()
        var lineNumber = 0
        var start = 0
        while start < input.count {
            let end = input[start...].firstIndex(of: UInt8(ascii: "\n")) ?? input.count
            if end > maxBytes { throw .tooLarge }
            var line = input[start..<end]
            start = end + 1
            lineNumber += 1
            if lineNumber > maxLines { throw .tooManyLines }
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            if line.isEmpty { break }
            if line.contains(0) { throw .nul }
            guard let text = String(validating: line, as: UTF8.self) else { throw .notUTF8 }
            guard let equals = text.firstIndex(of: "=") else { throw .malformedLine(lineNumber) }
            let key = String(text[..<equals])
            let value = String(text[text.index(after: equals)...])
            if key == "capability[]" {
                request.capabilities.append(value)
            } else {
                request.attributes[key] = value
            }
        }
        return request
    }
}
