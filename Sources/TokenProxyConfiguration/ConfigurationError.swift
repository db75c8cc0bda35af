import Foundation

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
