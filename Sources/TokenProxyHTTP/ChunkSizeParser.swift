import TokenProxySupport

/// Parses `chunk-size [ chunk-ext ]` (RFC 9112 §7.1).
enum ChunkSizeParser {
    struct ChunkHead {
        var size: Int64
        var extensionBytes: Int
    }

    static func parse(_ line: UnsafeBufferPointer<UInt8>) -> Result<ChunkHead, ProxyError> {
        var size: Int64 = 0
        var index = 0
        while index < line.count, let value = Hex.value(of: line[index]) {
            guard size <= (Int64.max - Int64(value)) / 16 else {
                return .failure(ProxyError(.badRequest, "chunk size overflows"))
            }
            size = size * 16 + Int64(value)
            index += 1
        }
        guard index > 0 else {
            return .failure(ProxyError(.badRequest, "invalid chunk size"))
        }
        let extensionPart = line[index...]
        if !extensionPart.isEmpty {
            // chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] ): after the size
            // only optional whitespace and then ";" may follow.
            guard let semicolon = extensionPart.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }),
                line[semicolon] == UInt8(ascii: ";"),
                HTTPGrammar.isValidFieldValue(extensionPart)
            else {
                return .failure(ProxyError(.badRequest, "invalid chunk size"))
            }
        }
        return .success(ChunkHead(size: size, extensionBytes: extensionPart.count))
    }
}
