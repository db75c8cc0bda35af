import Foundation
import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A swift-log handler writing one line per event through a ``LogWriter`` (standard error by
/// default), as text or JSON (`--log-format`).
///
/// - `text`: the lines swift-log's own `StreamLogHandler` writes
///   (`2026-11-23T14:18:02+0000 info tokenproxy: key=value ... [Module] message`), but
///   cheaper for an access log of one line per request: the local time comes from
///   `localtime_r`, since `localtime` makes glibc `stat` `/etc/localtime` for every line, and
///   metadata is merged only when both sides have some. The message and every metadata key
///   and value have their control characters escaped (``TextEscaping``): a peer's text
///   quoted in a message cannot end the line or reach the terminal as an escape sequence.
/// - `json`: one object per line with Elastic Common Schema field names (``JSONLogLine``):
///   `@timestamp`, `log.level`, `log.logger`, `message`, then the metadata; JSON's string
///   escapes cover control characters there.
package struct LineLogHandler: LogHandler {
    /// How a line is written; the raw values are `--log-format`'s.
    package enum Format: String, Sendable, CaseIterable {
        case text
        case json
    }

    private let label: String
    private let format: Format
    private let writer: LogWriter
    /// Metadata added to every message from this handler.
    package var metadata: Logger.Metadata = [:]
    /// The minimum level written.
    package var logLevel: Logger.Level = .info

    /// Creates a handler for `label` writing `format` lines to `writer`.
    package init(label: String, format: Format, writer: LogWriter = .standardError) {
        self.label = label
        self.format = format
        self.writer = writer
    }

    /// Metadata by key.
    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    /// Writes one line.
    package func log(event: LogEvent) {
        let merged: Logger.Metadata
        if let explicit = event.metadata, !explicit.isEmpty {
            merged = self.metadata.isEmpty ? explicit : self.metadata.merging(explicit) { $1 }
        } else {
            merged = self.metadata
        }
        switch self.format {
        case .text:
            var line = self.textLine(event, merged)
            line.withUTF8 { self.writer.append($0) }
        case .json:
            self.writer.append(self.jsonLine(event, merged))
        }
    }

    private func textLine(_ event: LogEvent, _ metadata: Logger.Metadata) -> String {
        var line = Self.localTimestamp()
        line += " "
        line += event.level.rawValue
        if !self.label.isEmpty {
            line += " "
            line += self.label
        }
        line += ":"
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            line += " "
            line += TextEscaping.escape(key)
            line += "="
            line += Self.fieldValue(TextEscaping.escape("\(value)"))
        }
        line += " ["
        line += event.source
        line += "] "
        line += TextEscaping.escape("\(event.message)")
        line += "\n"
        return line
    }

    /// `value` as it stands after `key=`: quoted (logfmt's way, `"` and `\` escaped) when it
    /// is empty or holds a space, `=` or `"`, so that text a peer sent (an
    /// `error_description` in a reason) cannot pass for fields of its own.
    static func fieldValue(_ value: String) -> String {
        let needsQuotes =
            value.isEmpty
            || value.utf8.contains { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: "\"") }
        guard needsQuotes else { return value }
        var quoted = "\""
        for character in value.unicodeScalars {
            if character == "\"" || character == "\\" {
                quoted.unicodeScalars.append("\\")
            }
            quoted.unicodeScalars.append(character)
        }
        quoted += "\""
        return quoted
    }

    private func jsonLine(_ event: LogEvent, _ metadata: Logger.Metadata) -> [UInt8] {
        var line = JSONLogLine()
        line.add("@timestamp", string: JSONLogLine.utcTimestamp())
        line.add("log.level", string: event.level.rawValue)
        line.add("log.logger", string: self.label)
        line.add("message", string: "\(event.message)")
        line.addMetadata(metadata)
        return line.finish()
    }

    /// The local time to the second, with its UTC offset, as `StreamLogHandler` writes it.
    /// `localtime_r` does not re-read the time zone for every call as `localtime` does.
    private static func localTimestamp() -> String {
        var now = time(nil)
        var parts = tm()
        guard localtime_r(&now, &parts) != nil else { return "<unknown>" }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            guard let base = buffer.baseAddress else { return "<unknown>" }
            let count = strftime(base, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &parts)
            return String(decoding: UnsafeRawBufferPointer(start: base, count: count), as: UTF8.self)
        }
    }
}
