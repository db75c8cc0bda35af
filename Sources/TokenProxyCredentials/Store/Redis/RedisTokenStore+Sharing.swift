import Foundation
import TokenProxySupport

extension RedisTokenStore {
    /// The shared contents as this process should use them: the server's, with the grants it
    /// lost written back (``restored(_:)``), and with this process's unshared fields laid
    /// over. This process's copy becomes the same.
    func settled() throws(RedisStoreFailure) -> TokenStoreContents {
        for _ in 0..<10 {
            let snapshot = try self.fetch()
            let base = try self.restored(snapshot)
            let fields = Self.changedFields(snapshot.contents, base)
            if fields.isEmpty {
                self.state.withLockedValue { $0.seenEpoch = snapshot.epoch }
                return self.adopt(base)
            }
            if case .written = try self.compareAndSet(fields, contents: base, snapshot: snapshot) {
                return self.adopt(base)
            }
        }
        throw .redis(RedisError(.refused, "gave up writing back after 10 conflicting writes"))
    }

    /// Applies `body` to the shared contents with a compare-and-set of the fields it changed,
    /// reading again and retrying when another proxy wrote one of them first. When a lease
    /// this process held was lost meanwhile, the grant of the new holder is kept if it was
    /// obtained later than the one `body` writes.
    func updateShared<Result>(_ body: (inout TokenStoreContents) -> Result) throws(RedisStoreFailure) -> Result {
        try self.shareUnshared()
        var lostLeases: Set<String> = []
        for _ in 0..<50 {
            let snapshot = try self.fetch()
            var contents = try self.restored(snapshot)
            let result = body(&contents)
            for name in lostLeases {
                guard let theirs = snapshot.contents.grants[name], let ours = contents.grants[name] else { continue }
                if (theirs.obtainedAt ?? .distantPast) > (ours.obtainedAt ?? .distantPast) {
                    contents.grants[name] = theirs
                }
            }
            let fields = Self.changedFields(snapshot.contents, contents)
            if fields.isEmpty {
                self.state.withLockedValue { $0.seenEpoch = snapshot.epoch }
                _ = self.adopt(contents)
                return result
            }
            switch try self.compareAndSet(fields, contents: contents, snapshot: snapshot) {
            case .written:
                _ = self.adopt(contents)
                return result
            case .conflict:
                continue
            case .leaseLost(let names):
                lostLeases.formUnion(names)
            }
        }
        throw .redis(RedisError(.refused, "gave up writing after 50 conflicting writes"))
    }

    /// `snapshot`'s contents, plus, when the hash is not the one this process last saw (its
    /// epoch changed or it is gone: the server restarted empty, the key was evicted or
    /// deleted), every grant this process holds that the server lacks or holds older, and its
    /// pending revocations. Adopting the empty hash instead would drop the only copy of
    /// rotated refresh tokens, and the next refresh would spend a used one. A field whose
    /// value was refused as older than one read before gets this process's copy back too.
    func restored(_ snapshot: Snapshot) throws(RedisStoreFailure) -> TokenStoreContents {
        let seen = self.state.withLockedValue { $0.seenEpoch }
        let lost = seen != nil && seen != snapshot.epoch
        guard lost || !snapshot.older.isEmpty else { return snapshot.contents }
        let mine: TokenStoreContents
        do {
            mine = try self.local.read()
        } catch {
            throw .store(error)
        }
        var merged = snapshot.contents
        for (name, ours) in mine.grants {
            let theirs = merged.grants[name]
            let replaced = snapshot.older.contains(Self.grantField(name))
            if replaced
                || (lost && (theirs == nil || (ours.obtainedAt ?? .distantPast) > (theirs?.obtainedAt ?? .distantPast)))
            {
                merged.grants[name] = ours
            }
        }
        if lost || snapshot.older.contains(Self.revocationsField) {
            for revocation in mine.pendingRevocations where !merged.pendingRevocations.contains(revocation) {
                merged.pendingRevocations.append(revocation)
            }
        }
        if !lost && merged != snapshot.contents {
            self.logger.warning(
                "token store value replaced or removed without a proxy's write: this proxy writes its copy back",
                metadata: ["store": "\(self.location)", "fields": "\(snapshot.older.sorted())"]
            )
        }
        if lost && merged != snapshot.contents {
            self.logger.warning(
                """
                token store lost its contents (restarted empty, or the key was evicted or deleted): \
                this proxy writes back the tokens it holds
                """,
                metadata: ["store": "\(self.location)", "grants": "\(mine.grants.count)"]
            )
        }
        return merged
    }

    /// Makes `contents` this process's copy, with the fields it could not share yet laid over
    /// them; returns that copy.
    func adopt(_ contents: TokenStoreContents) -> TokenStoreContents {
        let unshared = self.state.withLockedValue { $0.unshared }
        let adopted = try? self.local.update { mine -> TokenStoreContents in
            var merged = contents
            for field in unshared {
                if field == Self.revocationsField {
                    merged.pendingRevocations = mine.pendingRevocations
                } else {
                    let name = String(field.dropFirst("grant:".count))
                    merged.grants[name] = mine.grants[name]
                }
            }
            mine = merged
            return merged
        }
        return adopted ?? contents
    }

    /// Writes to the server the grants this process obtained while it could not be reached
    /// or refused writes, each only when the server holds none newer (by the time it was
    /// obtained), and adds the revocations still pending. Nothing to do when everything was
    /// shared.
    func shareUnshared() throws(RedisStoreFailure) {
        let fields = self.state.withLockedValue { $0.unshared }
        guard !fields.isEmpty else { return }
        let mine: TokenStoreContents
        do {
            mine = try self.local.read()
        } catch {
            throw .store(error)
        }
        for _ in 0..<10 {
            let snapshot = try self.fetch()
            var merged = try self.restored(snapshot)
            for field in fields where field.hasPrefix("grant:") {
                let name = String(field.dropFirst("grant:".count))
                guard let ours = mine.grants[name] else { continue }
                let theirs = merged.grants[name]
                let oursAt = ours.obtainedAt ?? .distantPast
                if theirs == nil || oursAt > (theirs?.obtainedAt ?? .distantPast) {
                    merged.grants[name] = ours
                }
            }
            if fields.contains(Self.revocationsField) {
                for revocation in mine.pendingRevocations where !merged.pendingRevocations.contains(revocation) {
                    merged.pendingRevocations.append(revocation)
                }
            }
            let changed = Self.changedFields(snapshot.contents, merged)
            var written = changed.isEmpty
            if written {
                self.state.withLockedValue { $0.seenEpoch = snapshot.epoch }
            } else if case .written = try self.compareAndSet(changed, contents: merged, snapshot: snapshot) {
                written = true
            }
            if written {
                self.state.withLockedValue { $0.unshared.subtract(fields) }
                _ = self.adopt(merged)
                self.logger.notice(
                    "token store: tokens obtained while it was unreachable are shared",
                    metadata: ["fields": "\(fields.count)", "store": "\(self.location)"]
                )
                return
            }
        }
    }

    /// Notes that the refused value `digest` was reported; false when it was before.
    func noteReported(_ digest: String) -> Bool {
        self.state.withLockedValue { state in
            if state.reported.count >= 1024 { state.reported.removeAll() }
            return state.reported.insert(digest).inserted
        }
    }
}
