import Foundation
import TokenProxySupport

/// Why a shared read or write did not happen: the server (then the store serves from
/// memory), or the store itself (the key cannot be read: reported, never hidden).
enum RedisStoreFailure: Error {
    /// The server cannot be reached or refused the command.
    case redis(RedisError)
    /// The encryption key cannot be read, or a value cannot be sealed.
    case store(TokenStoreError)
}

/// What a compare-and-set did.
enum RedisWriteOutcome: Equatable {
    /// Written; the hash's epoch after the write.
    case written(epoch: String)
    /// Another writer changed a field first: read again and retry.
    case conflict
    /// A lease this process held on these providers is gone: nothing was written.
    case leaseLost(Set<String>)
}

extension RedisTokenStore {
    /// The hash as read: the contents of the values that opened, every field's raw value
    /// (what a compare-and-set expects to find), the hash's epoch (nil: no hash), and the
    /// fields refused as older than what this process read before.
    struct Snapshot {
        var contents = TokenStoreContents()
        var raw: [String: [UInt8]] = [:]
        var epoch: String?
        /// The fields whose value is older than one this process read before (left out of
        /// ``contents``), or gone without a write since this process read it.
        var older: Set<String> = []
    }

    /// Writes `fields` of `contents` if each still holds its value in `snapshot` and every
    /// lease this process holds on a provider among them is still its own.
    func compareAndSet(
        _ fields: Set<String>,
        contents: TokenStoreContents,
        snapshot: Snapshot
    ) throws(RedisStoreFailure) -> RedisWriteOutcome {
        let held = self.state.withLockedValue { $0.leases }
        let leases = held.filter { fields.contains(Self.grantField($0.key)) }.sorted { $0.key < $1.key }
        var generator = SystemRandomNumberGenerator()
        let epoch =
            snapshot.epoch ?? Hex.encode((0..<8).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        var arguments: [[UInt8]] = [
            Array("EVAL".utf8), Array(RedisScripts.compareAndSet.utf8), Array(String(1 + leases.count).utf8),
            Array(self.seal.hashKey.utf8),
        ]
        arguments += leases.map { Array(self.leaseKey($0.key).utf8) }
        arguments.append(Array(epoch.utf8))
        arguments += leases.map { Array($0.value.utf8) }
        var generations: [String: Int] = [:]
        for field in fields.sorted() {
            let counter = snapshot.raw[RedisSealedRecord<StoredGrant>.generationField(field)]
            let generation = RedisSealedRecord<StoredGrant>.generation(counter) + 1
            generations[field] = generation
            arguments.append(Array(field.utf8))
            arguments.append(snapshot.raw[field] ?? [])
            arguments.append(counter ?? [])
            arguments.append(Array(String(generation).utf8))
            do {
                arguments.append(try self.sealedValue(of: field, in: contents, generation: generation) ?? [])
            } catch {
                throw .store(error)
            }
        }
        let answer: RedisReply
        do {
            answer = try self.client.command(arguments, what: "the compare-and-set script")
        } catch {
            throw .redis(error)
        }
        switch answer {
        case .integer(0):
            return .conflict
        case .integer(-1):
            let names = Set(leases.map(\.key))
            self.state.withLockedValue { state in
                for (name, fence) in leases where state.leases[name] == fence { state.leases[name] = nil }
            }
            for name in names.sorted() {
                self.client.leaseLost(self.leaseKey(name), "a write under it found it expired or held by another proxy")
            }
            return .leaseLost(names)
        case .array(let items) where items.count == 2 && items[0].integer.map({ $0 > 0 }) == true:
            let written = items[1].bytes.map(Self.counterText) ?? epoch
            self.state.withLockedValue { state in
                state.seenEpoch = written
                state.noteGenerations(generations, epoch: written)
            }
            self.client.accepted()
            return .written(epoch: written)
        default:
            throw .redis(RedisError(.refused, "the compare-and-set script gave an unexpected answer"))
        }
    }

    /// `field`'s value in `contents` with its `generation`, sealed; nil when the field is to be
    /// deleted.
    func sealedValue(
        of field: String,
        in contents: TokenStoreContents,
        generation: Int
    ) throws(TokenStoreError) -> [UInt8]? {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.sortedKeys]
        let plaintext: Data?
        if field == Self.revocationsField {
            let list = contents.pendingRevocations
            plaintext =
                list.isEmpty ? nil : try? encoder.encode(RedisSealedRecord(generation: generation, record: list))
        } else {
            plaintext = contents.grants[String(field.dropFirst("grant:".count))].flatMap {
                try? encoder.encode(RedisSealedRecord(generation: generation, record: $0))
            }
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
