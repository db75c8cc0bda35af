import Foundation

/// The bytes of a token store file, version 1 (see `docs/reference/token-store.md`).
///
/// Plain: `{"version": 1, "grants": {...}, "pending_revocations": [...]}`, dates as seconds
/// since 1970. Encrypted: `{"version": 1, "encryption": {"algorithm": "AES-256-GCM", "kdf":
/// "HKDF-SHA256", "salt": B64}, "sealed": B64}`, where `sealed` is the AES-GCM combined form
/// of the contents' JSON (the plain form without `version`).
///
/// Decoding errors carry only the reason; ``FileTokenStore`` adds the path.
enum TokenStoreFileFormat {
    /// The only format version this build reads and writes.
    static let version = 1

    /// The file for `contents`: encrypted when `secret` is given.
    static func encode(
        _ contents: TokenStoreContents,
        secret: String?,
        cipher: TokenStoreCipher
    ) throws(TokenStoreError) -> Data {
        do {
            guard let secret else {
                return try self.encoder(pretty: true).encode(PlainFile(contents: contents))
            }
            let plaintext = try self.encoder(pretty: false).encode(contents)
            let (salt, sealed) = try cipher.seal(plaintext, secret: secret)
            let file = EncryptedFile(
                version: self.version,
                encryption: .init(
                    algorithm: TokenStoreCipher.algorithm,
                    kdf: TokenStoreCipher.keyDerivation,
                    salt: salt.base64EncodedString()
                ),
                sealed: sealed.base64EncodedString()
            )
            return try self.encoder(pretty: true).encode(file)
        } catch let error as TokenStoreError {
            throw error
        } catch {
            throw TokenStoreError(.io, "cannot encode the token store: \(error)")
        }
    }

    /// The contents of a file. `secret` is asked for only when the file is encrypted; it
    /// throws `encryption_key_missing` when none is configured.
    ///
    /// Throws `corrupt` (not JSON, truncated, wrong shape) or `unsupported_version` for a file
    /// to move aside, `encryption_key_missing` or `decryption_failed` for one to leave alone.
    static func decode(
        _ data: Data,
        secret: () throws(TokenStoreError) -> String,
        cipher: TokenStoreCipher
    ) throws(TokenStoreError) -> TokenStoreContents {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        let header: Header
        do {
            header = try decoder.decode(Header.self, from: data)
        } catch {
            guard (try? JSONSerialization.jsonObject(with: data)) != nil else {
                throw TokenStoreError(.corrupt, "it is not JSON (truncated or overwritten)")
            }
            throw TokenStoreError(.corrupt, "it is JSON but has no integer \"version\"")
        }
        guard header.version == self.version else {
            throw TokenStoreError(
                .unsupportedVersion,
                "it is format version \(header.version); this build knows version \(self.version)"
            )
        }
        guard header.encryption != nil || header.sealed != nil else {
            return try self.contents(from: data, decoder)
        }
        guard let file = try? decoder.decode(EncryptedFile.self, from: data),
            let salt = Data(base64Encoded: file.encryption.salt),
            let sealed = Data(base64Encoded: file.sealed)
        else {
            throw TokenStoreError(.corrupt, "its \"encryption\" or \"sealed\" entry is malformed")
        }
        guard file.encryption.algorithm == TokenStoreCipher.algorithm,
            file.encryption.kdf == TokenStoreCipher.keyDerivation
        else {
            throw TokenStoreError(
                .unsupportedVersion,
                "it is encrypted with \(file.encryption.algorithm) / \(file.encryption.kdf); this build knows "
                    + "\(TokenStoreCipher.algorithm) / \(TokenStoreCipher.keyDerivation)"
            )
        }
        let plaintext = try cipher.open(sealed, salt: salt, secret: secret())
        return try self.contents(from: plaintext, decoder)
    }

    private static func contents(from data: Data, _ decoder: JSONDecoder) throws(TokenStoreError) -> TokenStoreContents
    {
        let contents: TokenStoreContents
        do {
            contents = try decoder.decode(TokenStoreContents.self, from: data)
        } catch {
            throw TokenStoreError(.corrupt, "its grants or pending revocations are malformed (\(Self.describe(error)))")
        }
        if let problem = Self.dateProblem(in: contents) {
            throw TokenStoreError(.corrupt, "its grants or pending revocations are malformed (\(problem))")
        }
        return contents
    }

    /// The dates a store may hold: 1970 to the end of year 9999, in seconds since 1970.
    /// A hand-edited or damaged file with a date outside (huge, negative) is corrupt.
    static let dateRange: ClosedRange<Double> = 0...253_402_300_799

    /// The first date outside ``dateRange``, by JSON path; never a value from the file.
    private static func dateProblem(in contents: TokenStoreContents) -> String? {
        func bad(_ date: Date?) -> Bool {
            guard let seconds = date?.timeIntervalSince1970 else { return false }
            return !seconds.isFinite || !self.dateRange.contains(seconds)
        }
        for name in contents.grants.keys.sorted() {
            guard let grant = contents.grants[name] else { continue }
            for (key, date) in [
                ("expires_at", grant.expiresAt), ("obtained_at", grant.obtainedAt),
                ("last_error_at", grant.lastErrorAt),
            ] where bad(date) {
                return "date out of range at .grants.\(name).\(key)"
            }
            if let pending = grant.pendingLogin, bad(pending.since) {
                return "date out of range at .grants.\(name).pending_login.since"
            }
        }
        for (index, pending) in contents.pendingRevocations.enumerated() where bad(pending.since) {
            return "date out of range at .pending_revocations[\(index)].since"
        }
        return nil
    }

    /// Where decoding stopped, by JSON path: never a value from the file, which may be a token.
    private static func describe(_ error: any Error) -> String {
        let context: DecodingError.Context
        switch error {
        case DecodingError.typeMismatch(_, let found), DecodingError.valueNotFound(_, let found),
            DecodingError.dataCorrupted(let found):
            context = found
        case DecodingError.keyNotFound(let key, let found):
            return "missing \(Self.path(found.codingPath + [key]))"
        default:
            return "undecodable"
        }
        return "bad value at \(Self.path(context.codingPath))"
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
    }

    private static func encoder(pretty: Bool) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes] : [.sortedKeys]
        return encoder
    }

    /// What every version-1 file starts with; tells the plain and encrypted forms apart.
    private struct Header: Decodable {
        var version: Int
        var encryption: AnyValue?
        var sealed: AnyValue?
    }

    /// Any JSON value: only its presence matters.
    private struct AnyValue: Decodable {
        init(from decoder: any Decoder) throws {}
    }

    /// `version` beside the contents' own keys, in one object.
    private struct PlainFile: Encodable {
        var contents: TokenStoreContents

        private enum CodingKeys: String, CodingKey {
            case version
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(TokenStoreFileFormat.version, forKey: .version)
            try self.contents.encode(to: encoder)
        }
    }

    private struct EncryptedFile: Codable {
        struct Encryption: Codable {
            var algorithm: String
            var kdf: String
            var salt: String
        }

        var version: Int
        var encryption: Encryption
        var sealed: String
    }
}
