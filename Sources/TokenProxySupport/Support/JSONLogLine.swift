import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One JSON log line with Elastic Common Schema (ECS) field names, as `--log-format json`
/// writes it (`docs/reference/log-fields.md`).
///
/// Metadata keys the proxy uses are renamed to their ECS fields (`status` becomes
/// `http.response.status_code`, `duration_ms` becomes `event.duration` in nanoseconds...);
/// numbers are written as JSON numbers and flags as booleans; keys without an ECS field go
/// under `tokenproxy.`. Keys are written flat, with dots, as ECS's JSON logging writes them.
package struct JSONLogLine {
    /// How a metadata key is written: its field name and the JSON type of its value.
    private enum Field {
        case string(String)
        case integer(String, scale: Int = 1)
        case boolean(String)
    }

    /// The proxy's metadata keys and their fields.
    private static let fields: [String: Field] = [
        "method": .string("http.request.method"),
        "path": .string("url.path"),
        "status": .integer("http.response.status_code"),
        "bytes": .integer("http.response.body.bytes"),
        "request_bytes": .integer("http.request.body.bytes"),
        // ECS `event.duration` is in nanoseconds.
        "duration_ms": .integer("event.duration", scale: 1_000_000),
        "client": .string("client.address"),
        "listen": .string("server.address"),
        "signal": .integer("process.signal"),
        "reason": .string("error.message"),
        "route": .string("tokenproxy.route"),
        "provider": .string("tokenproxy.provider"),
        "open": .integer("tokenproxy.open_connections"),
        "routes": .integer("tokenproxy.routes"),
        "dropped": .integer("tokenproxy.dropped_lines"),
        "aborted": .boolean("tokenproxy.aborted"),
        "replayed": .boolean("tokenproxy.replayed"),
        "nonce_retried": .boolean("tokenproxy.nonce_retried"),
        "resent": .boolean("tokenproxy.resent"),
        "token_refreshed": .boolean("tokenproxy.token_refreshed"),
        "tunnel": .boolean("tokenproxy.tunnel"),
    ]

    private var bytes: [UInt8] = [UInt8(ascii: "{")]
    private var names: Set<String> = []

    /// Adds a string field, unless a field of that name was added already.
    mutating func add(_ name: String, string value: String) {
        guard self.begin(name) else { return }
        Self.appendString(value, to: &self.bytes)
    }

    /// Adds the metadata, renamed and typed as the table says; unknown keys become
    /// `tokenproxy.KEY` strings. `error` is `error.code` when it is a code (`token_unavailable`),
    /// else `error.message`.
    mutating func addMetadata(_ metadata: Logger.Metadata) {
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            let text = "\(value)"
            switch Self.fields[key] {
            case .string(let name)?:
                self.add(name, string: text)
            case .integer(let name, let scale)?:
                if let number = Int64(text),
                    case (let scaled, false) = number.multipliedReportingOverflow(by: Int64(scale))
                {
                    guard self.begin(name) else { continue }
                    self.bytes.append(contentsOf: String(scaled).utf8)
                } else {
                    self.add(name, string: text)
                }
            case .boolean(let name)?:
                guard self.begin(name) else { continue }
                self.bytes.append(contentsOf: (text == "true" ? "true" : "false").utf8)
            case nil where key == "error":
                let isCode = !text.isEmpty && text.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F }
                self.add(isCode ? "error.code" : "error.message", string: text)
            case nil:
                self.add("tokenproxy.\(key)", string: text)
            }
        }
    }

    /// The finished line: the object and a newline.
    consuming func finish() -> [UInt8] {
        self.bytes.append(contentsOf: "}\n".utf8)
        return self.bytes
    }

    /// Writes the name and colon; false when the name is taken (the first value wins).
    private mutating func begin(_ name: String) -> Bool {
        guard self.names.insert(name).inserted else { return false }
        if self.bytes.count > 1 {
            self.bytes.append(UInt8(ascii: ","))
        }
        Self.appendString(name, to: &self.bytes)
        self.bytes.append(UInt8(ascii: ":"))
        return true
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// A JSON string (RFC 8259 §7): quote, backslash and control characters escaped. C1
    /// control characters (U+0080 to U+009F, two bytes in UTF-8: 0xC2 then 0x80 to 0x9F) are
    /// escaped too, though JSON allows them raw: a terminal showing the line could take
    /// U+009B for the start of an escape sequence (``TextEscaping``).
    package static func appendString(_ value: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        var afterC2 = false
        for byte in value.utf8 {
            if afterC2 {
                afterC2 = false
                if byte <= 0x9F {
                    bytes.append(contentsOf: #"\u00"#.utf8)
                    bytes.append(Self.hexDigits[Int(byte >> 4)])
                    bytes.append(Self.hexDigits[Int(byte & 0xF)])
                    continue
                }
                bytes.append(0xC2)
            }
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): bytes.append(contentsOf: #"\\"#.utf8)
            case UInt8(ascii: "\n"): bytes.append(contentsOf: #"\n"#.utf8)
            case UInt8(ascii: "\r"): bytes.append(contentsOf: #"\r"#.utf8)
            case UInt8(ascii: "\t"): bytes.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20, 0x7F:
                bytes.append(contentsOf: #"\u00"#.utf8)
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0xF)])
            case 0xC2: afterC2 = true
            default: bytes.append(byte)
            }
        }
        if afterC2 {
            bytes.append(0xC2)
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// The current time in UTC to the millisecond, ISO 8601 with `Z`
    /// (`2026-11-23T14:18:02.153Z`).
    static func utcTimestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        guard gmtime_r(&seconds, &parts) != nil else { return "1970-01-01T00:00:00.000Z" }
        let milliseconds = Int(now.tv_nsec / 1_000_000)
        let base = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 32) { buffer -> String in
            guard let start = buffer.baseAddress else { return "1970-01-01T00:00:00" }
            let count = strftime(start, buffer.count, "%Y-%m-%dT%H:%M:%S", &parts)
            return String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
        }
        let fraction = String(milliseconds)
        return base + "." + String(repeating: "0", count: 3 - fraction.count) + fraction + "Z"
    }
}
