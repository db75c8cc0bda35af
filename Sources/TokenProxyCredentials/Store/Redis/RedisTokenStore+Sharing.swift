import Foundation

extension RedisTokenStore {
    /// Writes to the server the grants this process obtained while it could not be reached,
    /// each only when the server holds none newer (by the time it was obtained), and adds
    /// the revocations still pending. Nothing to do when everything was shared.
    func shareUnshared() throws(RedisStoreFailure) {
        let fields = self.state.withLock { $0.unshared }
        guard !fields.isEmpty else { return }
        let mine: TokenStoreContents
        do {
            mine = try self.local.read()
        } catch {
            throw .store(error)
        }
        for _ in 0..<10 {
            let snapshot = try self.fetch()
            var merged = snapshot.contents
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
            if !written { written = try self.compareAndSet(changed, contents: merged, expected: snapshot.raw) }
            if written {
                self.state.withLock { $0.unshared.subtract(fields) }
                _ = try? self.local.update { $0 = merged }
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
        self.state.withLock { state in
            if state.reported.count >= 1024 { state.reported.removeAll() }
            return state.reported.insert(digest).inserted
        }
    }
}
