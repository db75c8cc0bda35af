import Foundation
import TokenProxySupport

extension FileTokenStore {
    /// The start-up check (RFC 6819 §5.3.3, `docs/reference/token-store.md`): the store file, when it
    /// exists, is a regular file of this user's that group and others cannot open; its
    /// directory, when it exists, belongs to this user and is closed to group and others
    /// (another owner, or a group member, could swap the file or roll it back). A missing file
    /// is fine: the first write creates it 0600, in directories created 0700.
    func checkPermissions() throws(TokenStoreError) {
        let status: FileStatus?
        do {
            status = try FileStatus.ofLink(self.path)
        } catch {
            guard error.isNoSuchFile else { throw TokenStoreError(io: error) }
            status = nil
        }
        if let status {
            if status.kind == .symbolicLink {
                throw TokenStoreError(.insecurePermissions, self.symbolicLinkProblem)
            }
            if let problem = Self.fileProblem(self.path, status) { throw problem }
        }
        if let status = try? FileStatus.of(path: self.directory),
            let problem = Self.directoryProblem(self.directory, status)
        {
            throw problem
        }
    }

    /// Why the directory described by `status` must not hold a token store, or nil: owned by
    /// another user, or with any group or other permission bit.
    static func directoryProblem(_ directory: String, _ status: FileStatus) -> TokenStoreError? {
        let user = FileSystem.currentUser
        if status.owner != user {
            return TokenStoreError(
                .insecurePermissions,
                "the token store's directory \(directory) belongs to uid \(status.owner), not to this user "
                    + "(uid \(user)), who could replace or roll back the store; fix it with: "
                    + "chown \(user) \(directory) && chmod 700 \(directory) "
                    + "(or set token_store.path to a private directory)"
            )
        }
        if status.permissions & 0o077 != 0 {
            let mode = StoreFileSystem.octal(status)
            return TokenStoreError(
                .insecurePermissions,
                "the token store's directory \(directory) is open to group or others (mode \(mode)), "
                    + "who could replace the store or read its names; fix it with: chmod 700 \(directory) "
                    + "(or set token_store.path to a private directory)"
            )
        }
        return nil
    }

    /// Whether the store's path is a symbolic link.
    var isSymbolicLink: Bool {
        (try? FileStatus.ofLink(self.path))?.kind == .symbolicLink
    }

    /// Why a symbolic link at the store's path is refused, and the fix.
    var symbolicLinkProblem: String {
        "\(self.path) is a symbolic link, which the token store does not follow (whoever can change the "
            + "link could redirect the tokens); set token_store.path to the real file, or replace the link "
            + "with the file itself"
    }

    /// Why the file described by `status` must not be used as a token store, or nil: not a
    /// regular file, owned by another user, or with any group or other permission bit.
    static func fileProblem(_ path: String, _ status: FileStatus) -> TokenStoreError? {
        guard status.kind == .regular else {
            return TokenStoreError(.io, "\(path) is not a regular file")
        }
        let user = FileSystem.currentUser
        if status.owner != user {
            return TokenStoreError(
                .insecurePermissions,
                "\(path) belongs to uid \(status.owner), not to this user (uid \(user)); fix it with: "
                    + "chown \(user) \(path) (or set token_store.path to a file of this user's)"
            )
        }
        if status.permissions & 0o077 != 0 {
            return TokenStoreError(
                .insecurePermissions,
                "\(path) is open to group or others (mode \(StoreFileSystem.octal(status))); "
                    + "fix it with: chmod 600 \(path)"
            )
        }
        return nil
    }
}
