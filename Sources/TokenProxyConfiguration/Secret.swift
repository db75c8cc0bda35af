import Foundation
import TokenProxySupport

/// A configuration secret: a literal string, `{"env": NAME}` or `{"file": PATH}`.
///
/// The value is looked up when ``resolve()`` is called, not when the configuration is loaded,
/// so a rotated file (a Kubernetes projected token, say) is picked up without a reload.
/// Printing a `Secret` (`description`, `debugDescription`, `dump`) never shows a literal value.
package enum Secret: Sendable, Equatable, Decodable {
    /// The value itself, written in the configuration file (`check` warns about these).
    case literal(String)
    /// The value of the named environment variable.
    case environment(String)
    /// The contents of the file at this path, with one trailing newline removed.
    case file(String)

    /// The largest secret file read (a PEM key or a service-account JSON is a few KiB).
    static let maxFileBytes = 1 << 20

    /// Resolves the current value.
    ///
    /// - `literal`: the string.
    /// - `environment`: the variable's value; unset or empty is an error.
    /// - `file`: the contents with ONE trailing `"\n"` (or `"\r\n"`) removed; re-read when the
    ///   file's inode, size, modification or change time differ from the last read. An
    ///   unreadable, empty, oversized or non-UTF-8 file is an error.
    ///
    /// Error messages name the variable or file, never the value.
    package func resolve() throws(ConfigurationError) -> String {
        switch self {
        case .literal(let value):
            return value
        case .environment(let name):
            guard let value = FileSystem.environmentValue(name) else {
                throw ConfigurationError(message: "environment variable \(name) is not set")
            }
            guard !value.isEmpty else {
                throw ConfigurationError(message: "environment variable \(name) is empty")
            }
            return value
        case .file(let path):
            return try SecretFileCache.shared.contents(of: path)
        }
    }

    /// Whether the value is written in the configuration file itself.
    var isLiteral: Bool {
        if case .literal = self { return true }
        return false
    }

    /// The path of a `{"file": PATH}` secret, else `nil`.
    var filePath: String? {
        if case .file(let path) = self { return path }
        return nil
    }

    /// Decodes a string (literal), `{"env": NAME}` or `{"file": PATH}`.
    package init(from decoder: any Decoder) throws {
        self = try decoder.withConfigurationProblems { problems in
            if let single = try? decoder.singleValueContainer(), let literal = try? single.decode(String.self) {
                guard !literal.isEmpty else { throw decoder.configurationFailure("must not be empty", problems) }
                return .literal(literal)
            }
            guard let object = try? decoder.container(keyedBy: ConfigurationCodingKey.self) else {
                let found = ConfigurationJSONKind.probe(decoder).map { ", found \($0)" } ?? ""
                throw decoder.configurationFailure(
                    "expected \(ConfigurationTypeName.of(Secret.self))\(found)",
                    problems
                )
            }
            let keys = decoder.configurationKeys(known: ["env", "file"], problems)
            let environmentKey = ConfigurationCodingKey("env")
            let fileKey = ConfigurationCodingKey("file")
            let name = object.configValue(String.self, forKey: environmentKey, problems)
            let path = object.configValue(String.self, forKey: fileKey, problems)
            switch (name, path) {
            case (let name?, nil):
                guard !name.isEmpty, !name.contains("="), !name.utf8.contains(0) else {
                    problems.add(at: decoder.codingPath + [environmentKey], "must be an environment variable name")
                    throw ConfigurationProblemReported()
                }
                return .environment(name)
            case (nil, let path?):
                guard !path.isEmpty, !path.utf8.contains(0) else {
                    problems.add(at: decoder.codingPath + [fileKey], "must be a file path")
                    throw ConfigurationProblemReported()
                }
                return .file(path)
            case (nil, nil):
                // A bad value, or only unknown keys: already reported.
                if !keys.isEmpty { throw ConfigurationProblemReported() }
                throw decoder.configurationFailure("expected {\"env\": NAME} or {\"file\": PATH}", problems)
            case (.some, .some):
                throw decoder.configurationFailure("use either 'env' or 'file', not both", problems)
            }
        }
    }
}

extension Secret: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// `<literal secret>`, `env:NAME` or `file:PATH`: never the value.
    package var description: String {
        switch self {
        case .literal: return "<literal secret>"
        case .environment(let name): return "env:\(name)"
        case .file(let path): return "file:\(path)"
        }
    }

    /// Same as ``description``.
    package var debugDescription: String { self.description }

    /// A mirror without children, so `dump` and reflection cannot reach a literal value.
    package var customMirror: Mirror {
        Mirror(self, children: [], displayStyle: .enum)
    }
}
