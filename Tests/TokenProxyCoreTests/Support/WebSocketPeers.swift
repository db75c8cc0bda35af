import Foundation

@testable import TokenProxyCredentials

/// The WebSocket server of `Tests/Interop/websocket_server.py` (the `websockets` package from
/// PyPI): it takes the bearer tokens it is given and answers 401 to the others.
final class WebSocketServer {
    /// What the server counted.
    struct Stats {
        var handshakes: Int
        var refused: Int
        var maxOpen: Int
        var closeCodes: [Int]
        var authorizations: [String]
        /// The `DPoP` header of each handshake ("" when absent).
        var proofs: [String]
    }

    private let server: InteropServer

    /// Starts a server taking `accept`; with `tls`, over TLS with that certificate and key,
    /// and with `clientCA`, asking for a client certificate signed by it.
    init(
        accept: [String],
        acceptDPoP: [String] = [],
        tls: (certificate: String, key: String)? = nil,
        clientCA: String? = nil
    ) throws {
        var arguments = accept.flatMap { ["--accept", $0] } + acceptDPoP.flatMap { ["--accept-dpop", $0] }
        if let tls {
            arguments += ["--tls", tls.certificate, tls.key]
        }
        if let clientCA {
            arguments += ["--client-ca", clientCA]
        }
        self.server = try InteropServer(script: "websocket_server.py", arguments: arguments)
    }

    var port: UInt16 { self.server.port }

    /// What the server counted so far (plain HTTP only).
    func stats() throws -> Stats {
        let response = try TestClient(port: self.port).get("/stats")
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] ?? [:]
        return Stats(
            handshakes: object["handshakes"] as? Int ?? -1,
            refused: object["refused"] as? Int ?? -1,
            maxOpen: object["max_open"] as? Int ?? -1,
            closeCodes: object["close_codes"] as? [Int] ?? [],
            authorizations: object["authorizations"] as? [String] ?? [],
            proofs: object["proofs"] as? [String] ?? []
        )
    }
}

/// The WebSocket client of `Tests/Interop/websocket_client.py`: runs one scenario and returns
/// the JSON object it printed.
enum WebSocketClient {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func run(_ scenario: String, url: String, _ arguments: [String] = []) throws -> [String: Any] {
        let script = ProjectPython.packageRoot.appendingPathComponent("Tests/Interop/websocket_client.py").path
        let output = try CommandRunner.run([ProjectPython.executable, script, scenario, url] + arguments, timeout: 150)
        let text = String(decoding: output.stdout, as: UTF8.self)
        let line = text.split(separator: "\n").last.map(String.init) ?? ""
        guard output.status == 0,
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else {
            throw Failure(description: "websocket_client.py \(scenario) failed: \(text) \(output.stderr)")
        }
        return object
    }
}
