import Foundation

/// Why a shared read or write did not happen: the server (then the store serves from
/// memory), or the store itself (the key cannot be read: reported, never hidden).
enum RedisStoreFailure: Error {
    /// The server cannot be reached or refused the command.
    case redis(RedisError)
    /// The encryption key cannot be read, or a value cannot be sealed.
    case store(TokenStoreError)
}

extension RedisTokenStore {
    /// The hash as read: the contents of the values that opened, and every field's raw
    /// value (what a compare-and-set expects to find).
    struct Snapshot {
        var contents = TokenStoreContents()
        var raw: [String: [UInt8]] = [:]
    }

    /// Reads the whole hash (`HGETALL`) and opens every value. A value that does not open
    /// under its field and the key is left out, logged once and counted, never used.
    func fetch() throws(RedisStoreFailure) -> Snapshot {
        let hashKey = self.seal.hashKey
        let answer: RedisReply
        do {
            answer = try self.client.run { connection throws(RedisError) in
                try connection.command(["HGETALL", hashKey])
            }
        } catch {
            throw .redis(error)
        }
        guard case .array(let items) = answer, items.count % 2 == 0 else {
            throw .redis(RedisError(.refused, "HGETALL \(hashKey) gave an unexpected answer (\(answer.errorText))"))
        }
        var snapshot = Snapshot()
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        for index in stride(from: 0, to: items.count, by: 2) {
            guard let fieldBytes = items[index].bytes, let value = items[index + 1].bytes else { continue }
            let field = String(decoding: fieldBytes, as: UTF8.self)
            snapshot.raw[field] = value
            let isGrant = field.hasPrefix("grant:")
            guard isGrant || field == Self.revocationsField else { continue }
            do {
                let plaintext = try self.seal.open(value, field: field)
                if isGrant {
                    guard let grant = try? decoder.decode(StoredGrant.self, from: plaintext) else {
                        self.refused(field, value, "it opened but is not a grant record")
                        continue
                    }
                    snapshot.contents.grants[String(field.dropFirst("grant:".count))] = grant
                } else {
                    guard let list = try? decoder.decode([PendingRevocation].self, from: plaintext) else {
                        self.refused(field, value, "it opened but is not a list of revocations")
                        continue
                    }
                    snapshot.contents.pendingRevocations = list
                }
            } catch  where error.code == .corrupt || error.code == .decryptionFailed {
                self.refused(field, value, error.message)
            } catch {
                throw .store(error)
            }
        }
        return snapshot
    }

    /// Applies `body` to the shared contents with a compare-and-set of the fields it changed,
    /// reading again and retrying when another proxy wrote one of them first.
    func updateShared<Result>(_ body: (inout TokenStoreContents) -> Result) throws(RedisStoreFailure) -> Result {
        try self.shareUnshared()
        var attempt = 0
        while true {
            attempt += 1
            let snapshot = try self.fetch()
            var contents = snapshot.contents
            let result = body(&contents)
            let fields = Self.changedFields(snapshot.contents, contents)
            if fields.isEmpty { return result }
            if try self.compareAndSet(fields, contents: contents, expected: snapshot.raw) {
                _ = try? self.local.update { $0 = contents }
                return result
            }
            guard attempt < 50 else {
                throw .redis(RedisError(.refused, "gave up writing after \(attempt) conflicting writes"))
            }
        }
    }

    /// Writes `fields` of `contents` if each still holds its value in `expected`; false when
    /// another writer changed one first.
    func compareAndSet(
        _ fields: Set<String>,
        contents: TokenStoreContents,
        expected: [String: [UInt8]]
    ) throws(RedisStoreFailure) -> Bool {
        var arguments: [[UInt8]] = [
            Array("EVAL".utf8), Array(RedisScripts.compareAndSet.utf8), Array("2".utf8),
            Array(self.seal.hashKey.utf8), Array((self.prefix + "revision").utf8),
        ]
        for field in fields.sorted() {
            arguments.append(Array(field.utf8))
            arguments.append(expected[field] ?? [])
            do {
                arguments.append(try self.sealedValue(of: field, in: contents) ?? [])
            } catch {
                throw .store(error)
            }
        }
        let answer: RedisReply
        do {
            answer = try self.client.run { connection throws(RedisError) in try connection.command(arguments) }
        } catch {
            throw .redis(error)
        }
        guard let revision = answer.integer else {
            throw .redis(RedisError(.refused, "the compare-and-set script failed (\(answer.errorText))"))
        }
        return revision != 0
    }

    /// `field`'s value in `contents`, sealed; nil when the field is to be deleted.
    func sealedValue(of field: String, in contents: TokenStoreContents) throws(TokenStoreError) -> [UInt8]? {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.sortedKeys]
        let plaintext: Data?
        if field == Self.revocationsField {
            plaintext = contents.pendingRevocations.isEmpty ? nil : try? encoder.encode(contents.pendingRevocations)
        } else {
            plaintext = contents.grants[String(field.dropFirst("grant:".count))].flatMap { try? encoder.encode($0) }
        }
        guard let plaintext else { return nil }
        return try self.seal.seal(plaintext, field: field)
    }

    /// The fields whose contents differ between `before` and `after`.
    static func changedFields(_ before: TokenStoreContents, _ after: TokenStoreContents) -> Set<String> {
        var fields: Set<String> = []
        for name in Set(before.grants.keys).union(after.grants.keys) where before.grants[name] != after.grants[name] {
            fields.insert(Self.grantField(name))
        }
        if before.pendingRevocations != after.pendingRevocations { fields.insert(Self.revocationsField) }
        return fields
    }

    /// Logs (once per value) and counts a value that is not used.
    func refused(_ field: String, _ value: [UInt8], _ reason: String) {
        let digest = "\(field)\n\(value.hashValue)"
        let first = self.noteReported(digest)
        guard first else { return }
        self.metrics?.tokenStoreError(store: "redis", kind: "rejected_value")
        self.logger.error(
            "token store value refused and not used",
            metadata: ["field": "\(field)", "store": "\(self.location)", "reason": "\(reason)"]
        )
    }
}

extension RedisReply {
    /// The error line of an `.error` answer, or a word naming the answer's kind.
    var errorText: String {
        switch self {
        case .error(let message): return message
        case .null: return "no value"
        default: return "another type"
        }
    }
}
