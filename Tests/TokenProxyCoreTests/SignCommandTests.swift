import Foundation
import Testing

/// `tokenproxy sign`: the base string, parameters and header of an `oauth1` request, with
/// no secret printed unless the signature is asked for.
struct SignCommandTests {
    private func config(in directory: ScriptDirectory, method: String = "HMAC-SHA1") throws -> String {
        let path = directory.path("proxy.json")
        try """
        {"providers": {"photos": {"grant": "oauth1", "consumer_key": "dpf43f3p2l4k3l03",
           "consumer_secret": {"env": "SIGN_TEST_CONSUMER_SECRET"}, "token": "nnch734d00sl2jdk",
           "token_secret": {"env": "SIGN_TEST_TOKEN_SECRET"}, "signature_method": "\(method)"}},
         "routes": [{"path_prefix": "/photos", "upstream": "https://photos.example.net", "provider": "photos"}]}
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private let environment = [
        "SIGN_TEST_CONSUMER_SECRET": "kd94hf93k423kf44", "SIGN_TEST_TOKEN_SECRET": "pfkkdhi9sl3r4s00",
    ]

    @Test func printsTheBaseStringAndHidesTheSignature() throws {
        let directory = try ScriptDirectory()
        let result = try TokenProxyBinary.run(
            [
                "sign", "--config", try self.config(in: directory), "photos", "GET",
                "http://photos.example.net/photos?file=vacation.jpg&size=original", "--nonce", "chapoH",
                "--timestamp", "137131202",
            ],
            environment: self.environment
        )
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("GET&http%3A%2F%2Fphotos.example.net%2Fphotos&file%3Dvacation.jpg%26"))
        #expect(result.stdout.contains(#"oauth_signature="(hidden: --show-signature)""#))
        for secret in self.environment.values {
            #expect(!result.stdout.contains(secret) && !result.stderr.contains(secret))
        }
    }

    @Test func plaintextSecretsAppearOnlyWhenAskedFor() throws {
        let directory = try ScriptDirectory()
        let arguments = [
            "sign", "--config", try self.config(in: directory, method: "PLAINTEXT"), "photos", "POST",
            "https://photos.example.net/photos", "--data", "a=1",
        ]
        let hidden = try TokenProxyBinary.run(arguments, environment: self.environment)
        #expect(hidden.status == 0)
        #expect(!hidden.stdout.contains("kd94hf93k423kf44"))
        #expect(hidden.stdout.contains("a=1"))
        let shown = try TokenProxyBinary.run(arguments + ["--show-signature"], environment: self.environment)
        #expect(shown.stdout.contains("kd94hf93k423kf44&pfkkdhi9sl3r4s00"))
    }

    @Test func aProviderOfAnotherGrantIsRefused() throws {
        let directory = try ScriptDirectory()
        let path = directory.path("proxy.json")
        try #"{"providers": {"s": {"grant": "static", "token": "x"}}, "routes": []}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        let result = try TokenProxyBinary.run(["sign", "--config", path, "s", "GET", "https://a.example/"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("does not use the oauth1 grant"))
    }
}
