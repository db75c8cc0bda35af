import CryptoExtras
import Foundation

extension ScriptDirectory {
    /// A new 2048-bit RSA key pair written as `public.pem` and `private.pem` (mode 0600), by
    /// path.
    func rsaKeyPair() throws -> (publicKey: String, privateKey: String) {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let publicKey = self.path("public.pem")
        try key.publicKey.pemRepresentation.write(toFile: publicKey, atomically: true, encoding: .utf8)
        let privateKey = try self.secretFile("private.pem", key.pemRepresentation)
        return (publicKey, privateKey)
    }

    /// `value` written to `name` with mode 0600, as a secret file must be; its path.
    func secretFile(_ name: String, _ value: String) throws -> String {
        let path = self.path(name)
        try value.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        return path
    }
}
