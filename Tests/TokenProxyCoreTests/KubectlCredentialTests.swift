import Foundation
import Testing

/// `tokenproxy credential kubectl` as a process: the `ExecCredential` it prints, its exit
/// codes, and a real kubectl using it as its exec credential plugin.
@Suite(.serialized) struct KubectlCredentialTests {
    private func run(
        _ fixture: KubectlFixture,
        _ arguments: [String],
        execInfo: String? = nil
    ) throws -> TokenProxyBinary.Result {
        var environment: [String: String] = [:]
        if let execInfo { environment["KUBERNETES_EXEC_INFO"] = execInfo }
        return try TokenProxyBinary.run(
            ["credential", "kubectl", "--config", fixture.config] + arguments,
            environment: environment
        )
    }

    @Test func printsAV1ExecCredentialWithTheTokenAndItsExpiry() throws {
        let fixture = try KubectlFixture(acceptedToken: "issued-1")
        let before = Date()
        let output = try self.run(fixture, ["--provider", "cluster"])
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stderr.isEmpty, "\(output.stderr)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any]
        )
        #expect(object["apiVersion"] as? String == "client.authentication.k8s.io/v1")
        #expect(object["kind"] as? String == "ExecCredential")
        let status = try #require(object["status"] as? [String: Any])
        #expect(status["token"] as? String == "issued-1")
        let stamp = try #require(status["expirationTimestamp"] as? String)
        let expiry = try #require(ISO8601DateFormatter().date(from: stamp))
        // The fake endpoint's tokens live an hour.
        #expect(expiry > before.addingTimeInterval(3000))
        #expect(expiry <= Date().addingTimeInterval(3600))
    }

    @Test func theOnlyProviderNeedsNoName() throws {
        let fixture = try KubectlFixture(acceptedToken: "issued-1")
        let info = #"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","spec":{}}"#
        let output = try self.run(fixture, [], execInfo: info)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains(#""apiVersion":"client.authentication.k8s.io/v1beta1""#))
        #expect(output.stdout.contains(#""token":"issued-1""#))
    }

    @Test func aMalformedExecInfoFailsWithoutAskingForAToken() throws {
        let fixture = try KubectlFixture(acceptedToken: "issued-1")
        let output = try self.run(fixture, ["--provider", "cluster"], execInfo: #"{"apiVersion":"example/v2"}"#)
        #expect(output.status == 1)
        #expect(output.stdout.isEmpty)
        #expect(output.stderr.contains("unsupported apiVersion"), "\(output.stderr)")
        #expect(fixture.auth.requests.isEmpty)
    }

    @Test func anUnknownProviderIsAConfigurationError() throws {
        let fixture = try KubectlFixture(acceptedToken: "issued-1")
        let output = try self.run(fixture, ["--provider", "nope"])
        #expect(output.status == 2)
        #expect(output.stdout.isEmpty)
        #expect(output.stderr.contains("cluster"), "\(output.stderr)")
    }

    @Test(arguments: ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"])
    func kubectlSendsThePluginsToken(execAPIVersion: String) throws {
        try #require(KubectlFixture.kubectl != nil, "kubectl is not installed")
        let fixture = try KubectlFixture(acceptedToken: "issued-1")
        let kubeconfig = try fixture.kubeconfig(execAPIVersion: execAPIVersion)
        let output = try fixture.getRawAPI(kubeconfig: kubeconfig)
        #expect(output.status == 0, "\(output.stderr)")
        #expect(output.stdout.contains("APIVersions"), "\(output.stdout)")
        #expect(fixture.auth.requests.count == 1)
    }

    @Test func kubectlFailsWhenTheServerRefusesTheToken() throws {
        try #require(KubectlFixture.kubectl != nil, "kubectl is not installed")
        let fixture = try KubectlFixture(acceptedToken: "another-token")
        let kubeconfig = try fixture.kubeconfig(execAPIVersion: "client.authentication.k8s.io/v1")
        let output = try fixture.getRawAPI(kubeconfig: kubeconfig)
        #expect(output.status != 0)
        #expect(!output.stdout.contains("APIVersions"), "\(output.stdout)")
        #expect(output.stderr.contains("must be logged in"), "\(output.stderr)")
        #expect(!fixture.auth.requests.isEmpty)
    }
}
