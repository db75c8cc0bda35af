import TokenProxySupport

/// Who may have chosen or changed a secret file (RFC 6819 §5.3.3, `docs/reference/security.md`,
/// "Secret files"): the rules, without I/O, applied to what `lstat` and `fstat` report at
/// every read.
///
/// A file's contents can be changed by whoever may write the file, and the file itself
/// swapped by whoever may write into a directory on the way to it or change a symbolic link
/// followed to reach it. So:
/// - the file is a regular file that others cannot write; this user's own file is closed to
///   group and others (this user can fix that; another user's file, as Kubernetes and Docker
///   mount secrets, is accepted as its owner chose);
/// - no directory on the way may be writable by others without the sticky bit;
/// - in a directory writable by others with the sticky bit (`/tmp`), an entry on the way
///   must belong to this user, root or the directory's owner, as Linux's
///   `fs.protected_regular` requires of files opened there;
/// - a symbolic link is followed only when it belongs to this user, root or the owner of
///   the directory that holds it, as Linux's `fs.protected_symlinks` does in sticky
///   directories. Kubernetes' root-owned `token -> ..data/token` chain passes.
struct SecretFileRules: Sendable {
    /// The user the process acts as (`geteuid()`): files are compared with it.
    var user: UInt32

    /// The rules for the process's effective user.
    static var current: SecretFileRules { SecretFileRules(user: FileSystem.currentUser) }

    /// Whether an entry owned by `owner` in a directory owned by `directoryOwner` can only
    /// have been put there by someone trusted already: this user, root or the directory's owner.
    func isTrusted(_ owner: UInt32, in directoryOwner: UInt32) -> Bool {
        owner == self.user || owner == 0 || owner == directoryOwner
    }

    /// Why `entry`, named `entryPath` inside `directoryPath`, must not be on the way to the
    /// secret file `file`, or `nil`.
    func entryProblem(
        file: String,
        entryPath: String,
        _ entry: FileStatus,
        directoryPath: String,
        _ directory: FileStatus
    ) -> String? {
        guard directory.permissions & 0o002 != 0 else { return nil }
        let mode = directory.octalPermissions
        guard directory.isSticky else {
            return "secret file \(file) is refused: the directory \(directoryPath) is writable by others "
                + "without the sticky bit (mode \(mode)), so anyone could replace \(entryPath); fix it with: "
                + "chmod o-w \(directoryPath)\(self.asOwner(directory)), or keep the secret in a private directory"
        }
        guard !self.isTrusted(entry.owner, in: directory.owner) else { return nil }
        return "secret file \(file) is refused: \(entryPath) belongs to uid \(entry.owner) in the shared "
            + "directory \(directoryPath) (mode \(mode)), where any user can create entries; only one of this "
            + "user (uid \(self.user)), root or the directory's owner (uid \(directory.owner)) is used there; "
            + "fix it by keeping the secret in a private directory"
    }

    /// Why the symbolic link `linkPath`, held by a directory owned by `directoryOwner`, must
    /// not be followed on the way to the secret file `file`, or `nil`.
    func linkProblem(file: String, linkPath: String, _ link: FileStatus, directoryOwner: UInt32) -> String? {
        guard !self.isTrusted(link.owner, in: directoryOwner) else { return nil }
        return "secret file \(file) is refused: the symbolic link \(linkPath) belongs to uid \(link.owner), "
            + "neither this user (uid \(self.user)), root nor the owner of its directory (uid \(directoryOwner)), "
            + "so it is not followed; fix it by naming the file itself in the configuration, or by replacing "
            + "the link with one of this user's"
    }

    /// Why the secret file `file`, described by `status` (its `lstat` on the way, or `fstat`
    /// once opened), must not be read, or `nil`: not a regular file, larger than `maxBytes`,
    /// writable by others, or this user's own file open to group or others.
    func fileProblem(file: String, _ status: FileStatus, maxBytes: Int) -> SecretFileError? {
        guard status.kind == .regular else {
            return .unreadable(file, "it is \(status.kind), not a regular file")
        }
        guard status.size <= Int64(maxBytes) else {
            return .unreadable(file, "larger than \(maxBytes) bytes")
        }
        let mode = status.octalPermissions
        if status.permissions & 0o002 != 0 {
            let fix = status.owner == self.user ? "chmod 600 \(file)" : "chmod o-w \(file)\(self.asOwner(status))"
            return SecretFileError(.refused, "\(file) is writable by others (mode \(mode)); fix it with: \(fix)")
        }
        guard status.owner == self.user, status.permissions & 0o066 != 0 else { return nil }
        return SecretFileError(
            .refused,
            "\(file) is readable or writable by group or others (mode \(mode)); fix it with: chmod 600 \(file)"
        )
    }

    /// " (as its owner)" when `status` belongs to another user, who alone can run the fix.
    private func asOwner(_ status: FileStatus) -> String {
        status.owner == self.user ? "" : " (as its owner, uid \(status.owner))"
    }
}
