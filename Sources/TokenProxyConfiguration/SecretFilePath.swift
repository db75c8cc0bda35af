import Foundation
import TokenProxySupport

/// The way to a secret file, walked one component at a time with `lstat` and `readlink` so
/// that ``SecretFileRules`` see every directory passed through and every symbolic link
/// followed, and the read that comes after.
///
/// The walk costs a few `lstat` calls and never opens anything, so it runs at every read.
/// The read then opens the real path it found without following links, never waits
/// (``BoundedFileRead``), and checks that the descriptor is the file the walk checked.
enum SecretFilePath {
    /// The most symbolic links followed for one path, as Linux's `MAXSYMLINKS`.
    static let maxLinks = 40

    /// The real path of the secret file `file` and its `lstat`, after checking every
    /// directory and link on the way and the file itself (kind, size, owner and mode).
    static func check(
        _ file: String,
        rules: SecretFileRules,
        maxBytes: Int
    ) throws(SecretFileError) -> (path: String, status: FileStatus) {
        let found = try self.walk(file, rules: rules)
        if let problem = rules.fileProblem(file: file, found.status, maxBytes: maxBytes) { throw problem }
        return found
    }

    /// The bytes of the secret file `file`, read after ``check(_:rules:maxBytes:)`` and
    /// checked again on the open descriptor, with that descriptor's status. A file replaced
    /// between the walk and the open (a Kubernetes update) is walked again, a few times at most.
    static func read(
        _ file: String,
        rules: SecretFileRules,
        maxBytes: Int
    ) throws(SecretFileError) -> (bytes: [UInt8], status: FileStatus) {
        for _ in 0..<3 {
            let found = try self.check(file, rules: rules, maxBytes: maxBytes)
            let bytes: [UInt8]
            let opened: FileStatus
            do {
                (bytes, opened) = try BoundedFileRead.read(path: found.path, maxBytes: maxBytes)
            } catch {
                switch error {
                case .system(let failure) where failure.isNoSuchFile || failure.isSymbolicLink:
                    continue  // replaced since the walk: walk again
                case .system(let failure):
                    throw .unreadable(file, failure.reason)
                case .notRegular(let kind):
                    throw .unreadable(file, "it is \(kind), not a regular file")
                case .tooLarge(let limit):
                    throw .unreadable(file, "larger than \(limit) bytes")
                }
            }
            guard opened.isSameFile(as: found.status) else { continue }
            if let problem = rules.fileProblem(file: file, opened, maxBytes: maxBytes) { throw problem }
            return (bytes, opened)
        }
        throw .unreadable(file, "it was replaced again and again while being read")
    }

    /// Follows `file` to the entry it names, applying the directory and link rules on the way.
    private static func walk(_ file: String, rules: SecretFileRules) throws(SecretFileError) -> (
        path: String, status: FileStatus
    ) {
        let absolute = file.hasPrefix("/") ? file : FileManager.default.currentDirectoryPath + "/" + file
        var pending = Array(self.components(absolute).reversed())
        let root = try self.status(of: "/", for: file)
        var directories: [(path: String, status: FileStatus)] = [("/", root)]
        var links = 0
        while let name = pending.popLast() {
            guard let directory = directories.last else { break }
            if name == ".." {
                if directories.count > 1 { directories.removeLast() }
                continue
            }
            let entryPath = directory.path == "/" ? "/" + name : directory.path + "/" + name
            let entry = try self.status(of: entryPath, for: file)
            if let problem = rules.entryProblem(
                file: file,
                entryPath: entryPath,
                entry,
                directoryPath: directory.path,
                directory.status
            ) {
                throw SecretFileError(.refused, problem)
            }
            if entry.kind == .symbolicLink {
                if let problem = rules.linkProblem(
                    file: file,
                    linkPath: entryPath,
                    entry,
                    directoryOwner: directory.status.owner
                ) {
                    throw SecretFileError(.refused, problem)
                }
                links += 1
                guard links <= self.maxLinks else { throw .unreadable(file, SystemError.tooManyLinksReason) }
                let target = try self.target(of: entryPath, for: file)
                if target.hasPrefix("/") { directories = [("/", root)] }
                pending.append(contentsOf: self.components(target).reversed())
                continue
            }
            if pending.isEmpty { return (entryPath, entry) }
            guard entry.kind == .directory else {
                throw .unreadable(file, "\(entryPath): \(SystemError.notADirectoryReason)")
            }
            directories.append((entryPath, entry))
        }
        // The path ends at a directory ("/", or a trailing "..").
        guard let last = directories.last else { return ("/", root) }
        return last
    }

    /// The names in `path`, without empty ones and `.`.
    private static func components(_ path: String) -> [String] {
        path.split(separator: "/").filter { $0 != "." }.map(String.init)
    }

    /// `lstat` of `path`, a step on the way to `file`.
    private static func status(of path: String, for file: String) throws(SecretFileError) -> FileStatus {
        do {
            return try FileStatus.ofLink(path)
        } catch {
            let reason = error.reason
            throw .unreadable(file, path == file ? reason : "\(path): \(reason)")
        }
    }

    /// What the symbolic link at `path` points to.
    private static func target(of path: String, for file: String) throws(SecretFileError) -> String {
        do {
            return try FileSystem.linkTarget(path)
        } catch {
            throw .unreadable(file, "\(path): \(error.reason)")
        }
    }
}
