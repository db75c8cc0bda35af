import Foundation
import Testing

/// `tokenproxy check` and `tokenproxy status` with a Redis token store: both name it, `check`
/// warns when it does not answer (the proxies serve without it), and `status`, which then has
/// nothing of the fleet's to show, says so and fails.
@Suite struct RedisCommandTests {
    @Test func checkAndStatusShowTheStoreAndWhetherItAnswers() throws {
        let redis = try RedisFixture()
        let directory = try ScriptDirectory()
        let config = directory.path("proxy.json")
        try """
        {"token_store": {"redis": {"url": "\(redis.url)/1", "encryption_key": "k3y-for-the-redis-tests"}},
         "providers": {"api": {"grant": "client_credentials", "token_url": "https://auth.example/token",
                               "client_id": "c", "client_secret": {"env": "TP_SECRET"}}},
         "routes": [{"path_prefix": "/api", "upstream": "https://api.example", "provider": "api"}]}
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let environment = ["TP_SECRET": "s"]
        let location = "token store: redis 127.0.0.1:\(redis.port)/1 (key prefix tokenproxy:)"

        let check = try TokenProxyBinary.run(["check", "--config", config], environment: environment)
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stdout.contains(location), "\(check.stdout)")
        #expect(!check.stderr.contains("unreachable"), "\(check.stderr)")
        let status = try TokenProxyBinary.run(["status", "--config", config], environment: environment)
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.contains(location), "\(status.stdout)")

        redis.stop()
        let checkWithout = try TokenProxyBinary.run(["check", "--config", config], environment: environment)
        #expect(checkWithout.status == 0, "\(checkWithout.stderr)")
        #expect(checkWithout.stderr.contains("warning: token store unreachable"), "\(checkWithout.stderr)")
        let statusWithout = try TokenProxyBinary.run(["status", "--config", config], environment: environment)
        #expect(statusWithout.status != 0)
        #expect(statusWithout.stderr.contains("token store unreachable"), "\(statusWithout.stderr)")
    }
}
