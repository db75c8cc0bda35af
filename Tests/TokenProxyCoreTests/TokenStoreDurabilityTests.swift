import Crypto
import Foundation
import Synchronization
import Testing
import TokenProxySupport

@testable import TokenProxyCredentials

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The file token store under failures and contention: saves that stop at each step, files
/// a crash left, instances sharing one file, provider locks.
@Suite("Token store durability")
struct TokenStoreDurabilityTests {
    private static let key = "dGhpcyBpcyBhIHRlc3Qga2V5LCBub3QgYSBzZWNyZXQ="

    @Test(arguments: FileTokenStore.SaveStep.allCases, [false, true])
    func saveFailingAtAStepLeavesAUsableStore(step: FileTokenStore.SaveStep, encrypted: Bool) throws {
        let fixture = try TokenStoreFixture()
        let key = encrypted ? Self.key : nil
        try fixture.store(key: key).update { $0 = TokenStoreFixture.sample }
        let injected = TokenStoreError(.io, "injected failure before \(step)")
        let armed = Locked(true)
        let faulty = fixture.store(key: key) { (current: FileTokenStore.SaveStep) throws(TokenStoreError) in
            let fire =
                current == step
                && armed.withLockedValue { armed in
                    defer { armed = false }
                    return armed
                }
            if fire { throw injected }
        }
        var changed = TokenStoreFixture.sample
        changed.grants["github"]?.accessToken = "gho_rotated_SECRET_6"
        #expect(storeError { try faulty.update { $0 = changed } } == injected)
        // Before the rename the old file is intact; after it the new one is in place.
        let expected = step == .syncDirectory ? changed : TokenStoreFixture.sample
        #expect(try fixture.store(key: key).read() == expected)
        #expect(fixture.temporaryFiles().isEmpty)
        #expect(fixture.asideFiles().isEmpty)
        #expect(fixture.mode(fixture.storePath) == 0o600)
        try faulty.update { $0.grants["after"] = StoredGrant(accessToken: "after") }
        var final = expected
        final.grants["after"] = StoredGrant(accessToken: "after")
        #expect(try fixture.store(key: key).read() == final)
        #expect(fixture.temporaryFiles().isEmpty)
    }

    @Test func temporaryFileLeftByACrashIsIgnoredAndThenRemoved() throws {
        let fixture = try TokenStoreFixture()
        try fixture.store().update { $0 = TokenStoreFixture.sample }
        let leftovers = [".tokens.json.tmp-4242-deadbeef", ".tokens.json.tmp-1-0badf00d"]
        try fixture.write(
            Data(#"{"version": 1, "grants": {"half"#.utf8),
            to: fixture.storeDirectory + "/" + leftovers[0]
        )
        try fixture.write(Data(), to: fixture.storeDirectory + "/" + leftovers[1])
        #expect(try fixture.store().read() == TokenStoreFixture.sample)
        #expect(fixture.temporaryFiles() == leftovers.sorted())
        try fixture.store().update { $0.grants["svc"] = nil }
        #expect(fixture.temporaryFiles().isEmpty)
        #expect(try fixture.store().read().grants.keys.sorted() == ["github"])
    }

    @Test func concurrentUpdatesThroughTwoInstancesLoseNothing() throws {
        let fixture = try TokenStoreFixture()
        let stores = [fixture.store(key: Self.key), fixture.store(key: Self.key)]
        let (writers, increments) = (8, 50)
        let failures = Failures()
        let group = DispatchGroup()
        for thread in 0..<writers {
            group.enter()
            let store = stores[thread % stores.count]
            // Threads of their own: these block on file locks.
            Thread.detachNewThread {
                defer { group.leave() }
                for _ in 0..<increments {
                    do {
                        try store.update { contents in
                            Self.increment(&contents, "counter")
                            Self.increment(&contents, "thread-\(thread)")
                        }
                    } catch {
                        failures.record("\(error)")
                    }
                }
            }
        }
        for reader in 0..<2 {
            group.enter()
            let store = stores[reader]
            Thread.detachNewThread {
                defer { group.leave() }
                var last = 0
                for _ in 0..<100 {
                    do {
                        let seen = Self.count(try store.read(), "counter")
                        if seen < last { failures.record("counter went back from \(last) to \(seen)") }
                        last = seen
                    } catch {
                        failures.record("\(error)")
                    }
                }
            }
        }
        group.wait()
        #expect(failures.first == [])
        let contents = try fixture.store(key: Self.key).read()
        #expect(Self.count(contents, "counter") == writers * increments)
        for thread in 0..<writers {
            #expect(Self.count(contents, "thread-\(thread)") == increments)
        }
        #expect(fixture.temporaryFiles().isEmpty)
    }

    /// The first few failures of many threads (the rest would only repeat them).
    private final class Failures: Sendable {
        private let kept = Mutex<[String]>([])

        var first: [String] { self.kept.withLockedValue { $0 } }

        func record(_ failure: String) {
            self.kept.withLockedValue { if $0.count < 5 { $0.append(failure) } }
        }
    }

    private static func count(_ contents: TokenStoreContents, _ name: String) -> Int {
        contents.grants[name]?.scope.flatMap { Int($0) } ?? 0
    }

    private static func increment(_ contents: inout TokenStoreContents, _ name: String) {
        contents.grants[name] = StoredGrant(scope: String(Self.count(contents, name) + 1))
    }

    @Test func providerLockExcludesOthersUntilReleased() throws {
        let fixture = try TokenStoreFixture()
        let (first, second) = (fixture.store(), fixture.store())
        let held = try first.lockProvider("github", deadline: .now + .seconds(30))
        let timeout = storeError { _ = try second.lockProvider("github", deadline: .now + .milliseconds(100)) }
        #expect(timeout?.code == .lockTimeout)
        #expect(timeout?.message.contains("github") == true)
        // Another instance in this process, or the same one, is excluded alike.
        #expect(storeError { _ = try first.lockProvider("github", deadline: .now) }?.code == .lockTimeout)
        // Other providers and the store itself are not held up.
        let other = try second.lockProvider("gitlab", deadline: .now)
        try second.update { $0.grants["gitlab"] = StoredGrant(accessToken: "x") }
        held.release()
        held.release()
        let again = try second.lockProvider("github", deadline: .now)
        again.release()
        other.release()
    }

    /// A process that holds the store-wide lock for ever (stopped, or stuck on a disk) costs
    /// a reader or a writer a bounded wait, never its thread.
    @Test func aStoreLockHeldForEverIsATimeoutNotAHang() throws {
        let fixture = try TokenStoreFixture()
        try fixture.store().update { $0.grants["svc"] = StoredGrant(accessToken: "x") }
        let holder = open(fixture.storePath + ".lock", O_RDWR | O_CLOEXEC)
        #expect(holder >= 0)
        defer { close(holder) }
        #expect(flock(holder, LOCK_EX) == 0)
        let store = FileTokenStore(
            path: fixture.storePath,
            encryptionKey: nil,
            faults: nil,
            lockWait: .milliseconds(200)
        )
        #expect(storeError { _ = try store.read() }?.code == .lockTimeout)
        #expect(storeError { try store.update { $0.grants["svc"] = nil } }?.code == .lockTimeout)
        flock(holder, LOCK_UN)
        #expect(try store.read().grants["svc"]?.accessToken == "x")
    }

    @Test func waitingProviderLockIsGrantedOnlyAfterRelease() throws {
        let fixture = try TokenStoreFixture()
        let held = try fixture.store().lockProvider("svc", deadline: .now + .seconds(30))
        let events = Locked<[String]>([])
        let group = DispatchGroup()
        group.enter()
        let waiter = fixture.store()
        // While it is held, another holder cannot have it at all.
        #expect(storeError { _ = try waiter.lockProvider("svc", deadline: .now) }?.code == .lockTimeout)
        let waiting = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { group.leave() }
            do {
                waiting.signal()
                let lock = try waiter.lockProvider("svc", deadline: .now + .seconds(30))
                events.withLockedValue { $0.append("acquired") }
                lock.release()
            } catch {
                events.withLockedValue { $0.append("\(error)") }
            }
        }
        waiting.wait()
        events.withLockedValue { $0.append("released") }
        held.release()
        group.wait()
        #expect(events.withLockedValue { $0 } == ["released", "acquired"])
    }

    @Test func droppedProviderLockIsReleased() throws {
        let fixture = try TokenStoreFixture()
        _ = try fixture.store().lockProvider("svc", deadline: .now)
        let lock = try fixture.store().lockProvider("svc", deadline: .now)
        lock.release()
    }

    @Test(arguments: ["github", "Git_Hub-2", String(repeating: "a", count: 64)])
    func providerLockFileIsNamedForThePlainProvider(provider: String) throws {
        let fixture = try TokenStoreFixture()
        try fixture.store().lockProvider(provider, deadline: .now).release()
        #expect(fixture.names() == ["tokens.json.\(provider).lock"])
        #expect(fixture.mode(fixture.storeDirectory + "/tokens.json.\(provider).lock") == 0o600)
    }

    @Test(arguments: ["my.provider", "../../escape", "", "ünïcode", "a b", "x/y", String(repeating: "a", count: 65)])
    func providerLockFileIsHashedForAnOddName(provider: String) throws {
        let fixture = try TokenStoreFixture()
        try fixture.store().lockProvider(provider, deadline: .now).release()
        let hash = SHA256.hash(data: Data(provider.utf8)).map { String(format: "%02x", $0) }.joined()
        #expect(fixture.names() == ["tokens.json.\(hash.prefix(16)).lock"])
        let rootNames = try FileManager.default.contentsOfDirectory(atPath: fixture.root)
        #expect(rootNames == ["state"])
    }
}
