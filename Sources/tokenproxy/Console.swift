import Foundation

/// Writing to standard error, where every command's diagnostics go (stdout carries only
/// results, such as `token`'s token or `check`'s route table).
enum Console {
    static func error(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

/// The process environment.
enum ProcessEnvironment {
    static var variables: [String: String] { ProcessInfo.processInfo.environment }
}
