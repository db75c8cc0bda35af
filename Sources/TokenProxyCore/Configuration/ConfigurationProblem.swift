import Foundation

/// One problem (or warning) found in a configuration, located by its JSON path.
///
/// Paths join object keys with `.` and write array indices as `[n]`, so a reader can find the
/// spot in the file: `routes[2].upstream`, `providers.github.token_url`, `listen`; the empty
/// path is the document itself. Messages never contain a secret value.
package struct ConfigurationProblem: Sendable, Equatable, CustomStringConvertible {
    /// The JSON path of the offending value, e.g. `routes[2].upstream`; `""` for the document.
    package var path: String
    /// What is wrong and, where possible, how to fix it.
    package var message: String

    /// Creates a problem at `path`.
    package init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    /// `path: message`, or only the message for the document itself.
    package var description: String {
        self.path.isEmpty ? self.message : "\(self.path): \(self.message)"
    }
}

/// The error thrown when a configuration cannot be used, carrying every problem found.
///
/// Loading collects all problems in one pass (unknown keys, wrong types, missing keys,
/// cross-references), so a user fixes the file once instead of once per error.
package struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Every problem found, in the order they were found; never empty.
    package var problems: [ConfigurationProblem]

    /// Creates an error from a list of problems.
    package init(problems: [ConfigurationProblem]) {
        self.problems = problems
    }

    /// Creates an error with a single problem.
    package init(path: String = "", message: String) {
        self.problems = [ConfigurationProblem(path: path, message: message)]
    }

    /// Every problem, one per line.
    package var description: String {
        self.problems.map(\.description).joined(separator: "\n")
    }
}

extension ConfigurationError: LocalizedError {
    /// Same as ``description``, so `localizedDescription` is useful too.
    package var errorDescription: String? { self.description }
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
