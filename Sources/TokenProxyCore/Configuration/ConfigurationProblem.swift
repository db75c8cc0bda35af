import Foundation

/// One problem (or warning) found in a configuration, located by its JSON path.
///
/// Paths join object keys with `.` and write array indices as `[n]`, so a reader can find the
/// spot in the file: `routes[2].upstream`, `providers.github.token_url`, `listen`; the empty
/// path is the document itself. Messages never contain a secret value.
public struct ConfigurationProblem: Sendable, Equatable, CustomStringConvertible {
    /// The JSON path of the offending value, e.g. `routes[2].upstream`; `""` for the document.
    public var path: String
    /// What is wrong and, where possible, how to fix it.
    public var message: String

    /// Creates a problem at `path`.
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    /// `path: message`, or only the message for the document itself.
    public var description: String {
        self.path.isEmpty ? self.message : "\(self.path): \(self.message)"
    }
}

/// The error thrown when a configuration cannot be used, carrying every problem found.
///
/// Loading collects all problems in one pass (unknown keys, wrong types, missing keys,
/// cross-references), so a user fixes the file once instead of once per error.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Every problem found, in the order they were found; never empty.
    public var problems: [ConfigurationProblem]

    /// Creates an error from a list of problems.
    public init(problems: [ConfigurationProblem]) {
        self.problems = problems
    }

    /// Creates an error with a single problem.
    public init(path: String = "", message: String) {
        self.problems = [ConfigurationProblem(path: path, message: message)]
    }

    /// Every problem, one per line.
    public var description: String {
        self.problems.map(\.description).joined(separator: "\n")
    }
}

extension ConfigurationError: LocalizedError {
    /// Same as ``description``, so `localizedDescription` is useful too.
    public var errorDescription: String? { self.description }
}

extension ConfigurationError {
    /// The same problems with `prefix` put in front of every path, for an error raised by a
    /// nested value (a ``ListenAddress`` parsed for `admin.listen`, say).
    func prefixingPaths(with prefix: String) -> ConfigurationError {
        ConfigurationError(
            problems: self.problems.map { problem in
                ConfigurationProblem(
                    path: ConfigurationPath.join(prefix, problem.path),
                    message: problem.message
                )
            }
        )
    }
}
