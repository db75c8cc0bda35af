import Crypto
import Foundation

@testable import TokenProxyCredentials
@testable import TokenProxyHTTP
@testable import TokenProxyServer
@testable import TokenProxySupport

/// An in-process authorization server for the interactive grants: an authorization
/// endpoint that approves at once (redirecting with a code), the code exchange with PKCE
/// checked, rotating refresh tokens, a device endpoint with scripted polling answers, and a
/// revocation endpoint with scripted statuses. Everything it sees is recorded.
final class FakeOAuthProvider: HTTPExchangeHandler, @unchecked Sendable {
    struct Code {
        var clientID: String
        var redirectURI: String
        var challenge: String?
        var used = false
    }

    struct Revocation: Equatable {
        var token: String
        var hint: String?
    }

    // The settings below without a lock (`revocationStatuses` to `exchangeDelay`) are set by
    // the test before the requests that read them.
    private let lock = NSLock()
    /// The server: written once in `init`, before any request can arrive.
    private var server: TestHTTPServer?
    /// The bound port: written once in `init`, before any request can arrive.
    private(set) var port: UInt16 = 0
    /// Codes issued and not yet exchanged (guarded by `lock`).
    private var codes: [String: Code] = [:]
    /// Refresh tokens still valid (guarded by `lock`).
    private var liveRefreshTokens: Set<String> = []
    /// Tokens issued so far (guarded by `lock`).
    private var counter = 0
    /// The grant type of each token request (guarded by `lock`).
    private var grants: [String] = []
    /// Each authorization request's query (guarded by `lock`).
    private var authorizeQueries: [[String: String]] = []
    /// Each revocation request (guarded by `lock`).
    private var revocationLog: [Revocation] = []
    /// Statuses for the next revocation requests (then 200); taken under `lock`.
    var revocationStatuses: [Int] = []
    /// Answers (OAuth error codes) for the next device polls; then a token is issued. Taken
    /// under `lock`.
    var devicePolls: [String] = []
    /// The `interval` the device endpoint announces, if any.
    var deviceInterval: Int?
    /// What `iss` the authorization response carries: the real issuer unless overridden;
    /// `""` sends none.
    var callbackIssuer: String?
    /// An `error` to send back instead of a code.
    var authorizationError: String?
    /// Whether the metadata says `iss` is always sent (RFC 9207).
    var issParameterSupported = true
    /// Delay before answering a refresh (to make concurrent refreshes overlap).
    var refreshDelay: Double = 0
    /// Delay before answering a code exchange (to let a replayed callback arrive meanwhile).
    var exchangeDelay: Double = 0
    /// The codes issued, in order.
    var issuedCodes: [String] { self.lock.withLock { self.codeLog } }
    /// Each code issued (guarded by `lock`).
    private var codeLog: [String] = []

    init() throws {
        self.server = try TestHTTPServer(handler: self)
        self.port = self.server?.port ?? 0
    }

    var origin: String { "http://127.0.0.1:\(self.port)" }
    /// Grant types of every token request, in order.
    var grantTypes: [String] { self.lock.withLock { self.grants } }
    var authorizeRequests: [[String: String]] { self.lock.withLock { self.authorizeQueries } }
    var revocations: [Revocation] { self.lock.withLock { self.revocationLog } }
    func count(_ grant: String) -> Int { self.grantTypes.filter { $0 == grant }.count }

    /// Adds a refresh token the server accepts (a seed for `refresh_token` providers).
    func acceptRefreshToken(_ token: String) {
        self.lock.withLock { _ = self.liveRefreshTokens.insert(token) }
    }

    /// Forgets every refresh token issued (a revocation, a restart that lost them).
    func forgetRefreshTokens() {
        self.lock.withLock { self.liveRefreshTokens.removeAll() }
    }

    func handle(_ exchange: HTTPExchange) {
        let head = exchange.head
        if head.method == "GET" {
            self.get(exchange)
            return
        }
        var body: [UInt8] = []
        exchange.readBody { [self] event in
            switch event {
            case .bytes(let bytes):
                body += bytes
            case .end:
                let form = Self.decode(String(decoding: body, as: UTF8.self))
                let (status, json, delay) = self.post(path: head.path, form: form)
                var headers = HTTPHeaders()
                headers.add(name: "Content-Type", value: "application/json")
                headers.add(name: "Cache-Control", value: "no-store")
                let response = HTTPResponse(status: status, headers: headers, body: Array(json.utf8))
                if delay > 0 {
                    let bound = QueueBound(exchange, context: exchange.context)
                    DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
                        bound.execute { $0.respond(response) }
                    }
                } else {
                    exchange.respond(response)
                }
            }
        }
    }

    private func get(_ exchange: HTTPExchange) {
        var headers = HTTPHeaders()
        switch exchange.head.path {
        case "/.well-known/openid-configuration":
            let document = """
                {"issuer": "\(self.origin)", "token_endpoint": "\(self.origin)/token",
                 "authorization_endpoint": "\(self.origin)/authorize",
                 "device_authorization_endpoint": "\(self.origin)/device",
                 "revocation_endpoint": "\(self.origin)/revoke",
                 "authorization_response_iss_parameter_supported": \(self.issParameterSupported)}
                """
            headers.add(name: "Content-Type", value: "application/json")
            exchange.respond(HTTPResponse(status: 200, headers: headers, body: Array(document.utf8)))
        case "/authorize":
            let query = Self.decode(exchange.head.query ?? "")
            self.lock.withLock { self.authorizeQueries.append(query) }
            guard let redirect = query["redirect_uri"], query["response_type"] == "code" else {
                exchange.respond(HTTPResponse(status: 400, body: Array("bad authorization request".utf8)))
                return
            }
            var parameters: [(String, String)] = []
            if let error = self.authorizationError {
                parameters.append(("error", error))
            } else {
                let code = "code-" + UUID().uuidString
                self.lock.withLock {
                    self.codes[code] = Code(
                        clientID: query["client_id"] ?? "",
                        redirectURI: redirect,
                        challenge: query["code_challenge"]
                    )
                }
                self.lock.withLock { self.codeLog.append(code) }
                parameters.append(("code", code))
            }
            if let state = query["state"] { parameters.append(("state", state)) }
            let issuer = self.callbackIssuer ?? self.origin
            if !issuer.isEmpty { parameters.append(("iss", issuer)) }
            let location = redirect + "?" + parameters.map { "\($0.0)=\(Self.encode($0.1))" }.joined(separator: "&")
            headers.add(name: "Location", value: location)
            exchange.respond(HTTPResponse(status: 302, headers: headers, body: []))
        default:
            exchange.respond(HTTPResponse(status: 404, body: []))
        }
    }

    private func post(path: String, form: [String: String]) -> (Int, String, Double) {
        self.lock.withLock {
            switch path {
            case "/device":
                let interval = self.deviceInterval.map { #", "interval": \#($0)"# } ?? ""
                return (
                    200,
                    #"{"device_code": "dev-1", "user_code": "WDJB-MJHT", "verification_uri": "\#(self.origin)/activate", "verification_uri_complete": "\#(self.origin)/activate?user_code=WDJB-MJHT", "expires_in": 1800\#(interval)}"#,
                    0
                )
            case "/revoke":
                self.revocationLog.append(Revocation(token: form["token"] ?? "", hint: form["token_type_hint"]))
                let status = self.revocationStatuses.isEmpty ? 200 : self.revocationStatuses.removeFirst()
                if status == 200, let token = form["token"] { self.liveRefreshTokens.remove(token) }
                return (status, status == 200 ? "{}" : #"{"error": "temporarily_unavailable"}"#, 0)
            case "/token":
                let grant = form["grant_type"] ?? ""
                self.grants.append(grant)
                switch grant {
                case "authorization_code":
                    guard let code = form["code"], var issued = self.codes[code], !issued.used,
                        issued.redirectURI == form["redirect_uri"], issued.clientID == form["client_id"]
                    else { return (400, #"{"error": "invalid_grant"}"#, 0) }
                    issued.used = true
                    self.codes[code] = issued
                    if let challenge = issued.challenge {
                        let verifier = form["code_verifier"] ?? ""
                        let computed = Data(SHA256.hash(data: Data(verifier.utf8))).base64EncodedString()
                            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                            .replacingOccurrences(of: "=", with: "")
                        guard verifier.count >= 43, computed == challenge else {
                            return (400, #"{"error": "invalid_grant", "error_description": "PKCE"}"#, 0)
                        }
                    }
                    return (200, self.issue(), self.exchangeDelay)
                case "refresh_token":
                    guard let token = form["refresh_token"], self.liveRefreshTokens.remove(token) != nil else {
                        return (400, #"{"error": "invalid_grant"}"#, 0)
                    }
                    return (200, self.issue(), self.refreshDelay)
                case "password":
                    // RFC 6749 §4.3: the user's own credentials.
                    guard form["username"] == "alice", form["password"] == "wonderland" else {
                        return (400, #"{"error": "invalid_grant"}"#, 0)
                    }
                    return (200, self.issue(), 0)
                case "urn:ietf:params:oauth:grant-type:device_code":
                    guard form["device_code"] == "dev-1" else { return (400, #"{"error": "invalid_grant"}"#, 0) }
                    if !self.devicePolls.isEmpty {
                        return (400, #"{"error": "\#(self.devicePolls.removeFirst())"}"#, 0)
                    }
                    return (200, self.issue(), 0)
                default:
                    return (400, #"{"error": "unsupported_grant_type"}"#, 0)
                }
            default:
                return (404, "{}", 0)
            }
        }
    }

    /// A new access token and rotated refresh token; call with the lock held.
    private func issue() -> String {
        self.counter += 1
        let refresh = "refresh-\(self.counter)"
        self.liveRefreshTokens.insert(refresh)
        return
            #"{"access_token": "access-\#(self.counter)", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "\#(refresh)", "scope": "read"}"#
    }

    /// A form body or query as a dictionary (the last of repeated names wins); the fakes'
    /// own reading, independent of the proxy's encoder.
    static func decode(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            fields[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        return fields
    }

    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    }
}
