import Foundation
import Logging
import Synchronization
import TokenProxySupport

/// Writing to standard error, where every command's diagnostics go (stdout carries only
/// results, such as `token`'s token or `check`'s route table).
///
/// `serve --log-format json` routes these lines through its logger instead, so that every
/// line on standard error, start-up warnings and fatal errors included, is one JSON object.
///
/// A message may quote a peer (a token endpoint's `error_description`, a discovered URL):
/// every line has its control characters escaped (``TextEscaping``), so one message is
/// one line however it was made, and a line break is only where a caller passes separate
/// lines.
enum Console {
    private static let logger = Mutex<Logger?>(nil)

    /// Sends diagnostics through `logger` from now on (`nil`: plain lines).
    static func useLogger(_ logger: Logger?) {
        self.logger.withLockedValue { $0 = logger }
    }

    /// Writes an error: each of `lines` on a line of its own (as plain lines, an empty one
    /// too; through a logger, each non-empty one as an error).
    static func error(_ lines: String...) {
        if let logger = self.logger.withLockedValue({ $0 }) {
            for line in lines where !line.isEmpty {
                logger.error("\(line)")
            }
        } else {
            for line in lines {
                self.write(line)
            }
        }
    }

    /// Writes a warning (`warning: ` in front as a plain line).
    static func warning(_ line: String) {
        if let logger = self.logger.withLockedValue({ $0 }) {
            logger.warning("\(line)")
        } else {
            self.write("warning: \(line)")
        }
    }

    /// Writes a note: something worth knowing that is not wrong (`note: ` in front as a plain
    /// line; `notice` through a logger).
    static func note(_ line: String) {
        if let logger = self.logger.withLockedValue({ $0 }) {
            logger.notice("\(line)")
        } else {
            self.write("note: \(line)")
        }
    }

    /// Writes a heading and the problems under it (a refused configuration): as plain lines,
    /// the problems indented below the heading; through a logger, one critical line for the
    /// heading and one error line per problem.
    static func problems(_ heading: String, _ problems: [String]) {
        if let logger = self.logger.withLockedValue({ $0 }) {
            logger.critical("\(heading)")
            for problem in problems {
                logger.error("\(problem)")
            }
        } else {
            self.write(heading)
            for problem in problems {
                self.write("  \(problem)")
            }
        }
    }

    /// Writes `line`, escaped, and a line feed to standard error.
    private static func write(_ line: String) {
        FileHandle.standardError.write(Data((TextEscaping.escape(line) + "\n").utf8))
    }
}

/// The process environment.
enum ProcessEnvironment {
    static var variables: [String: String] { ProcessInfo.processInfo.environment }
}
