import Foundation
import TokenProxySupport

extension RedisTokenStore {
    /// Reads the whole hash (`HGETALL`) and opens every value. A value that does not open
    /// under its field and the key, or is older than one this process already read of its
    /// field (``RedisSealedRecord``), is left out, logged once and counted, never used; such
    /// a field, and one whose value vanished without a write, is listed in
    /// ``Snapshot/older`` for this process's copy to be written back.
    func fetch() throws(RedisStoreFailure) -> Snapshot {
        let hashKey = self.seal.hashKey
        let answer: RedisReply
        do {
            answer = try self.client.command(["HGETALL", hashKey], what: "HGETALL \(hashKey)")
        } catch {
            throw .redis(error)
        }
        guard case .array(let items) = answer, items.count % 2 == 0 else {
            throw .redis(RedisError(.refused, "HGETALL \(hashKey) gave an unexpected answer (\(answer.errorText))"))
        }
        var snapshot = Snapshot()
        for index in stride(from: 0, to: items.count, by: 2) {
            guard let field = items[index].bytes, let value = items[index + 1].bytes else { continue }
            snapshot.raw[String(decoding: field, as: UTF8.self)] = value
        }
        snapshot.epoch = snapshot.raw["epoch"].map(Self.counterText)
        let seen = self.state.withLockedValue { $0.generationsEpoch == snapshot.epoch ? $0.generations : [:] }
        var read: [String: Int] = [:]
        for (field, value) in snapshot.raw where field.hasPrefix("grant:") || field == Self.revocationsField {
            do {
                let plaintext = try self.seal.open(value, field: field)
                guard let generation = self.open(plaintext, field: field, value: value, into: &snapshot.contents)
                else { continue }
                let before = seen[field] ?? 0
                guard generation >= before else {
                    // Left out of the contents too: an older value is never used.
                    if field == Self.revocationsField {
                        snapshot.contents.pendingRevocations = []
                    } else {
                        snapshot.contents.grants[String(field.dropFirst("grant:".count))] = nil
                    }
                    snapshot.older.insert(field)
                    self.refused(
                        field,
                        value,
                        "it is older (write \(generation)) than one already read (write \(before)): an earlier value "
                            + "was written back"
                    )
                    continue
                }
                read[field] = generation
            } catch  where error.code == .corrupt || error.code == .decryptionFailed {
                self.refused(field, value, error.message)
            } catch {
                throw .store(error)
            }
        }
        // A value this process read that is gone while its write count did not move was not
        // deleted by a proxy (a deletion is a write): it is treated as lost, not as a logout.
        for (field, generation) in seen where snapshot.raw[field] == nil {
            let counter = snapshot.raw[RedisSealedRecord<StoredGrant>.generationField(field)]
            if RedisSealedRecord<StoredGrant>.generation(counter) <= generation { snapshot.older.insert(field) }
        }
        self.state.withLockedValue { $0.noteGenerations(read, epoch: snapshot.epoch) }
        return snapshot
    }

    /// Decodes the opened `plaintext` of `field` into `contents`; its generation, or nil
    /// (reported) when it is not a record of that field.
    private func open(
        _ plaintext: Data,
        field: String,
        value: [UInt8],
        into contents: inout TokenStoreContents
    ) -> Int? {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        if field == Self.revocationsField {
            guard let sealed = try? decoder.decode(RedisSealedRecord<[PendingRevocation]>.self, from: plaintext) else {
                self.refused(field, value, "it opened but is not a list of revocations")
                return nil
            }
            contents.pendingRevocations = sealed.record
            return sealed.generation
        }
        guard let sealed = try? decoder.decode(RedisSealedRecord<StoredGrant>.self, from: plaintext) else {
            self.refused(field, value, "it opened but is not a grant record")
            return nil
        }
        contents.grants[String(field.dropFirst("grant:".count))] = sealed.record
        return sealed.generation
    }
}

extension RedisTokenStore {
    /// The text of an `epoch` or `revision` value, at most 64 bytes of it: whoever can write
    /// to the server chooses these values, and they are kept and compared, never used.
    static func counterText(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.prefix(64), as: UTF8.self)
    }
}

extension RedisTokenStore.State {
    /// Notes the `generations` (field → generation) read or written in the hash of `epoch`;
    /// those of another epoch (a hash created anew) are forgotten first.
    mutating func noteGenerations(_ generations: [String: Int], epoch: String?) {
        if epoch != self.generationsEpoch {
            self.generations = [:]
            self.generationsEpoch = epoch
        }
        for (field, generation) in generations {
            self.generations[field] = max(self.generations[field] ?? 0, generation)
        }
    }
}
