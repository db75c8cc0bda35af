import Crypto
import CryptoExtras
import Foundation
import Testing

@testable import TokenProxyConfiguration
@testable import TokenProxyCredentials

/// RFC 5849's own examples and the encoding rules of §3.6, reproduced by the signer.
struct OAuth1SignerTests {
    private func signer(
        _ method: OAuth1SignatureMethod = .hmacSHA1,
        consumerKey: String = "dpf43f3p2l4k3l03",
        consumerSecret: String = "kd94hf93k423kf44",
        token: String? = nil,
        tokenSecret: String? = nil,
        realm: String? = nil
    ) -> OAuth1Signer {
        OAuth1Signer(
            credentials: .init(
                consumerKey: consumerKey,
                consumerSecret: consumerSecret,
                token: token,
                tokenSecret: tokenSecret,
                method: method,
                rsaKey: nil,
                realm: realm,
                sendsVersion: false
            )
        )
    }

    /// RFC 5849 §1.2: the temporary-credentials request, signed with HMAC-SHA1.
    @Test func theTemporaryCredentialsRequestOfSection1_2() throws {
        let signature = try self.signer(realm: "Photos").sign(
            method: "POST",
            url: "https://photos.example.net/initiate",
            nonce: "wIjqoS",
            timestamp: "137131200",
            extra: [.init(name: "oauth_callback", value: "http://printer.example.com/ready")]
        )
        #expect(signature.signature == "74KNZJeDHnMBp0EMJ9ZHt/XKycU=")
        #expect(signature.header.hasPrefix(#"OAuth realm="Photos", oauth_consumer_key="dpf43f3p2l4k3l03""#))
        #expect(signature.header.contains(#"oauth_callback="http%3A%2F%2Fprinter.example.com%2Fready""#))
        #expect(signature.header.hasSuffix(#"oauth_signature="74KNZJeDHnMBp0EMJ9ZHt%2FXKycU%3D""#))
    }

    /// RFC 5849 §1.2: the token request, with the temporary credentials.
    @Test func theTokenRequestOfSection1_2() throws {
        let signature = try self.signer(token: "hh5s93j4hdidpola", tokenSecret: "hdhd0244k9j7ao03").sign(
            method: "POST",
            url: "https://photos.example.net/token",
            nonce: "walatlh",
            timestamp: "137131201",
            extra: [.init(name: "oauth_verifier", value: "hfdp7dh39dks9884")]
        )
        #expect(signature.signature == "gKgrFCywp7rO0OXSjdot/IHF7IU=")
    }

    /// RFC 5849 §1.2: the protected-resource request, with a query.
    @Test func theResourceRequestOfSection1_2() throws {
        let signature = try self.signer(token: "nnch734d00sl2jdk", tokenSecret: "pfkkdhi9sl3r4s00").sign(
            method: "GET",
            url: "http://photos.example.net/photos?file=vacation.jpg&size=original",
            nonce: "chapoH",
            timestamp: "137131202"
        )
        #expect(signature.signature == "MdpQcU8iPSUjWoN/UDMsK2sui9I=")
    }

    /// RFC 5849 §3.4.1.1: the base string of a request with a query, a form body, repeated
    /// names, an empty value and a realm that is not signed.
    @Test func theBaseStringOfSection3_4_1_1() throws {
        let signature = try self.signer(
            consumerKey: "9djdj82h48djs9d2",
            consumerSecret: "j49sk3j29djd",
            token: "kkk9d7dh3k39sjv7",
            tokenSecret: "dh893hdasih9",
            realm: "Example"
        ).sign(
            method: "POST",
            url: "http://example.com/request?b5=%3D%253D&a3=a&c%40=&a2=r%20b",
            formBody: Array("c2&a3=2+q".utf8),
            nonce: "7d8f3e4a",
            timestamp: "137131201"
        )
        #expect(
            signature.baseString
                == "POST&http%3A%2F%2Fexample.com%2Frequest&a2%3Dr%2520b%26a3%3D2%2520q%26a3%3Da%26b5%3D%253D%25253D"
                + "%26c%2540%3D%26c2%3D%26oauth_consumer_key%3D9djdj82h48djs9d2%26oauth_nonce%3D7d8f3e4a"
                + "%26oauth_signature_method%3DHMAC-SHA1%26oauth_timestamp%3D137131201%26oauth_token%3Dkkk9d7dh3k39sjv7"
        )
        #expect(!signature.baseString.contains("realm"))
    }

    /// §3.4.1.2: scheme and host in lower case, default ports dropped, others kept.
    @Test(arguments: [
        ("HTTP://EXAMPLE.COM:80/r%20v/X?id=123", "http://example.com/r%20v/X"),
        ("https://www.example.net:8080/?q=1", "https://www.example.net:8080/"),
        ("https://Example.com:443", "https://example.com/"),
        ("http://example.com:443/a", "http://example.com:443/a"),
    ])
    func baseStringURIs(url: String, expected: String) throws {
        let signature = try self.signer().sign(method: "GET", url: url, nonce: "n", timestamp: "1")
        let encoded = signature.baseString.split(separator: "&")[1]
        #expect(encoded == OAuth1Signer.encode(expected))
    }

    /// §3.6: only the unreserved characters stay; everything else is UTF-8 bytes as %XX.
    @Test(arguments: [
        ("abcABC123", "abcABC123"), ("-._~", "-._~"), (" ", "%20"), ("+", "%2B"), ("*", "%2A"),
        ("!'()", "%21%27%28%29"), ("%", "%25"), ("&=", "%26%3D"), ("é", "%C3%A9"), ("☃", "%E2%98%83"),
        ("", ""), ("/?#[]@", "%2F%3F%23%5B%5D%40"),
    ])
    func percentEncoding(raw: String, encoded: String) {
        #expect(OAuth1Signer.encode(raw) == encoded)
    }

    /// §3.4.1.3.2: names sorted first, a repeated name's values sorted next, both by the
    /// bytes of their encoded forms; a `+` in a form is a space.
    @Test func parametersSortByNameThenValue() throws {
        let sorted = OAuth1Signer.normalise(
            try #require(OAuth1Signer.decodeForm("b=2&a=z&a=A&a=10&a=9&c+d=e+f&empty=&flag"))
        )
        #expect(
            sorted.map { "\($0.name)=\($0.value)" } == [
                "a=10", "a=9", "a=A", "a=z", "b=2", "c%20d=e%20f", "empty=", "flag=",
            ]
        )
    }

    /// HMAC-SHA256 and PLAINTEXT use the same key; PLAINTEXT sends the key itself.
    @Test func hmacSHA256AndPlaintext() throws {
        let plaintext = try self.signer(.plaintext, consumerSecret: "c&s", tokenSecret: "t s").sign(
            method: "GET",
            url: "https://api.example.com/",
            nonce: "n",
            timestamp: "1"
        )
        #expect(plaintext.signature == "c%26s&t%20s")
        let hmac = try self.signer(.hmacSHA256, token: "t", tokenSecret: "ts").sign(
            method: "GET",
            url: "https://api.example.com/",
            nonce: "n",
            timestamp: "1"
        )
        let expected = HMAC<SHA256>.authenticationCode(
            for: Data(hmac.baseString.utf8),
            using: SymmetricKey(data: Data("kd94hf93k423kf44&ts".utf8))
        )
        #expect(hmac.signature == Data(expected).base64EncodedString())
    }

    /// RSA-SHA1 signs the base string's SHA-1 with PKCS #1 v1.5; the public key verifies it.
    @Test func rsaSHA1VerifiesWithThePublicKey() throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        var credentials = self.signer(.rsaSHA1).credentials
        credentials.rsaKey = key
        let signature = try OAuth1Signer(credentials: credentials).sign(
            method: "GET",
            url: "https://api.example.com/x?a=1",
            nonce: "n",
            timestamp: "1"
        )
        let raw = try #require(Data(base64Encoded: signature.signature))
        #expect(
            key.publicKey.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: raw),
                for: Insecure.SHA1.hash(data: Data(signature.baseString.utf8)),
                padding: .insecurePKCS1v1_5
            )
        )
    }

    /// Every call with a fresh nonce gives a new signature (a replay is signed anew).
    @Test func freshNoncesGiveFreshSignatures() throws {
        let signer = self.signer(token: "t", tokenSecret: "s")
        let first = try signer.sign(
            method: "GET",
            url: "https://a.example/",
            nonce: OAuth1Signer.nonce(),
            timestamp: "1"
        )
        let second = try signer.sign(
            method: "GET",
            url: "https://a.example/",
            nonce: OAuth1Signer.nonce(),
            timestamp: "1"
        )
        #expect(first.signature != second.signature)
    }
}
