import Foundation
import Testing

@testable import TokenProxyConfiguration

/// `token_store: {"redis": {...}}`: the URL forms, the password's precedence, and a problem
/// at its path for everything wrong.
@Suite struct RedisConfigurationTests {
    private func document(_ redis: String) -> String {
        ConfigurationTestSupport.document(extra: #""token_store": {"redis": \#(redis)}"#)
    }

    private func redis(_ redis: String) throws -> RedisStoreConfiguration {
        let configuration = try ConfigurationTestSupport.decode(self.document(redis))
        guard case .redis(let found) = configuration.tokenStore else {
            throw TestFailure(message: "not a Redis store: \(configuration.tokenStore)")
        }
        return found
    }

    @Test func aURLWithUserPasswordAndDatabase() throws {
        let found = try self.redis(
            #"{"url": "redis://fleet:p%40ss@redis.internal:6380/3", "encryption_key": {"env": "K"}}"#
        )
        #expect(found.address == .tcp(host: "redis.internal", port: 6380))
        #expect(found.username == "fleet")
        #expect(found.password == .literal("p@ss"))
        #expect(found.database == 3)
        #expect(found.encryptionKey == .environment("K"))
        #expect(found.keyPrefix == "tokenproxy:")
    }

    @Test func aSeparatePasswordOverridesTheURLsAndDefaultsApply() throws {
        let found = try self.redis(
            #"{"url": "redis://:old@[::1]", "password": {"file": "/run/secrets/redis"}, "encryption_key": "k", "key_prefix": "team-a:"}"#
        )
        #expect(found.address == .tcp(host: "::1", port: 6379))
        #expect(found.username == nil)
        #expect(found.password == .file("/run/secrets/redis"))
        #expect(found.database == 0)
        #expect(found.keyPrefix == "team-a:")
    }

    @Test func aUnixSocket() throws {
        let found = try self.redis(#"{"url": "unix:///run/redis/redis.sock", "encryption_key": "k"}"#)
        #expect(found.address == .unix(path: "/run/redis/redis.sock"))
        #expect(found.password == nil)
    }

    @Test(
        "each mistake is reported at its path",
        arguments: [
            (#"{"encryption_key": "k"}"#, "token_store.redis.url", "is required"),
            (#"{"url": "redis://h"}"#, "token_store.redis.encryption_key", "is required"),
            (#"{"url": "rediss://h", "encryption_key": "k"}"#, "token_store.redis.url", "rediss:// is not supported"),
            (#"{"url": "redis://h:0", "encryption_key": "k"}"#, "token_store.redis.url", "the port must be"),
            (#"{"url": "redis://h/x", "encryption_key": "k"}"#, "token_store.redis.url", "database number"),
            (#"{"url": "unix://relative", "encryption_key": "k"}"#, "token_store.redis.url", "ABSOLUTE"),
            (
                #"{"url": "redis://h", "encryption_key": "k", "key_prefix": "a b"}"#, "token_store.redis.key_prefix",
                "printable"
            ),
            (
                #"{"url": "redis://h", "encryption_key": "k", "pasword": "x"}"#, "token_store.redis.pasword",
                "did you mean 'password'"
            ),
        ]
    )
    func mistakes(redis: String, path: String, message: String) {
        let problems = ConfigurationTestSupport.problems(self.document(redis))
        #expect(problems.map(\.path) == [path], "\(problems.map(\.description))")
        #expect(problems.first?.message.contains(message) == true, "\(problems.map(\.description))")
    }

    @Test func theSecretsAreListedForCheck() throws {
        let configuration = try ConfigurationTestSupport.decode(
            self.document(#"{"url": "redis://h", "password": {"env": "P"}, "encryption_key": {"file": "/k"}}"#)
        )
        let paths = configuration.secrets.map(\.path)
        #expect(paths.contains("token_store.redis.password"))
        #expect(paths.contains("token_store.redis.encryption_key"))
    }
}
