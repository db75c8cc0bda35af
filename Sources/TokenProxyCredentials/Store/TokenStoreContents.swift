import Foundation

/// Everything in a token store.
package struct TokenStoreContents: Codable, Sendable, Equatable {
    /// Provider name → its tokens.
    var grants: [String: StoredGrant]
    /// Revocations still to send.
    package var pendingRevocations: [PendingRevocation]

    /// Creates contents (empty by default).
    package init(grants: [String: StoredGrant] = [:], pendingRevocations: [PendingRevocation] = []) {
        self.grants = grants
        self.pendingRevocations = pendingRevocations
    }

    enum CodingKeys: String, CodingKey {
        case grants
        case pendingRevocations = "pending_revocations"
    }

    /// Decodes leniently about the lists: a store written without pending revocations is fine.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.grants = try container.decodeIfPresent([String: StoredGrant].self, forKey: .grants) ?? [:]
        self.pendingRevocations =
            try container.decodeIfPresent([PendingRevocation].self, forKey: .pendingRevocations) ?? []
    }
}
