import Foundation
import Testing

@testable import TokenProxyCredentials

/// The `ExecCredential` document a kubectl exec plugin prints, and how the API version is
/// read from `KUBERNETES_EXEC_INFO`.
@Suite struct ExecCredentialTests {
    private func object(_ credential: ExecCredential) throws -> [String: Any] {
        let parsed = try JSONSerialization.jsonObject(with: Data(credential.json))
        return try #require(parsed as? [String: Any])
    }

    @Test(arguments: ExecCredential.APIVersion.allCases)
    func theDocumentIsInTheAskedVersion(version: ExecCredential.APIVersion) throws {
        let credential = ExecCredential(apiVersion: version, token: "t-1", expiration: nil)
        let object = try self.object(credential)
        #expect(object["apiVersion"] as? String == version.rawValue)
        #expect(object["kind"] as? String == "ExecCredential")
        #expect(credential.json.last == UInt8(ascii: "\n"))
    }

    @Test func anUnknownExpiryIsLeftOut() throws {
        let credential = ExecCredential(apiVersion: .v1, token: "t-1", expiration: nil)
        let status = try #require(try self.object(credential)["status"] as? [String: Any])
        #expect(status["token"] as? String == "t-1")
        #expect(status.keys.sorted() == ["token"])
    }

    @Test func aKnownExpiryIsAnRFC3339TimestampInWholeSecondsRoundedDown() throws {
        let expiration = Date(timeIntervalSince1970: 1_795_000_000.75)
        let credential = ExecCredential(apiVersion: .v1beta1, token: "t-1", expiration: expiration)
        let status = try #require(try self.object(credential)["status"] as? [String: Any])
        #expect(status["expirationTimestamp"] as? String == "2026-11-18T11:06:40Z")
    }

    @Test func theTokenIsEscaped() throws {
        let token = "a\"b\\c\n</script>\u{1}"
        let credential = ExecCredential(apiVersion: .v1, token: token, expiration: nil)
        let status = try #require(try self.object(credential)["status"] as? [String: Any])
        #expect(status["token"] as? String == token)
        #expect(!credential.json.dropLast().contains(UInt8(ascii: "\n")))
    }

    @Test func noExecInfoMeansV1() {
        #expect(ExecCredential.apiVersion(execInfo: nil) == .success(.v1))
        #expect(ExecCredential.apiVersion(execInfo: "") == .success(.v1))
    }

    @Test(arguments: ExecCredential.APIVersion.allCases)
    func theExecInfoNamesTheVersion(version: ExecCredential.APIVersion) {
        let info = """
            {"kind":"ExecCredential","apiVersion":"\(version.rawValue)","spec":{"interactive":false}}
            """
        #expect(ExecCredential.apiVersion(execInfo: info) == .success(version))
    }

    @Test(arguments: [
        ("not json", "not a JSON object"),
        ("[]", "not a JSON object"),
        ("\"client.authentication.k8s.io/v1\"", "not a JSON object"),
        (#"{"apiVersion": "client.authentication.k8s.io/v1""#, "not a JSON object"),
        (#"{"kind": "ExecCredential"}"#, "no apiVersion"),
        (#"{"apiVersion": 1}"#, "no apiVersion"),
        (#"{"apiVersion": "client.authentication.k8s.io/v1alpha1"}"#, "unsupported apiVersion"),
        (#"{"apiVersion": "v1"}"#, "unsupported apiVersion"),
        (#"{"apiVersion": "client.authentication.k8s.io/v1", "kind": "Pod"}"#, "kind"),
    ])
    func aMalformedExecInfoIsRefused(info: String, problem: String) throws {
        guard case .failure(let error) = ExecCredential.apiVersion(execInfo: info) else {
            Issue.record("accepted \(info)")
            return
        }
        #expect(error.message.contains(problem), "\(error.message)")
    }

    @Test func anOversizedExecInfoIsRefusedUnread() throws {
        let padding = String(repeating: " ", count: ExecCredential.execInfoLimit)
        let info = #"{"apiVersion": "client.authentication.k8s.io/v1"}"# + padding
        guard case .failure(let error) = ExecCredential.apiVersion(execInfo: info) else {
            Issue.record("accepted an oversized value")
            return
        }
        #expect(error.message.contains("longer than"))
    }
}
