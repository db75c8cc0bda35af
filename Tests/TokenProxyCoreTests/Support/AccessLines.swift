import Foundation
import Logging
import Testing

/// The access-log lines (`request`) among captured logs, as their fields.
enum AccessLines {
    /// The first `count` of them, in order, or nil while fewer were written.
    static func of(_ logs: CapturedLogs, count: Int) -> [[String: String]]? {
        let lines = logs.text.split(separator: "\n").filter { $0.hasPrefix("info request ") }
        guard lines.count >= count else { return nil }
        return lines.prefix(count).map { line in
            var fields: [String: String] = [:]
            for pair in line.dropFirst("info request ".count).split(separator: " ") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2 {
                    fields[String(parts[0])] = String(parts[1])
                }
            }
            return fields
        }
    }
}
