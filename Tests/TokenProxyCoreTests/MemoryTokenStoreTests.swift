import Foundation
import Synchronization
import Testing

@testable import TokenProxyCredentials

@Suite struct MemoryTokenStoreTests {
    @Test func aProviderLockExcludesOtherHoldersUntilReleased() throws {
        let store = MemoryTokenStore()
        let first = try store.lockProvider("app", deadline: .now + .seconds(1))
        #expect(throws: TokenStoreError.self) { _ = try store.lockProvider("app", deadline: .now + .milliseconds(50)) }
        // Other providers are not held up.
        try store.lockProvider("other", deadline: .now + .milliseconds(50)).release()
        first.release()
        try store.lockProvider("app", deadline: .now + .milliseconds(50)).release()
    }
}
