/// `credential git erase`: git reports that the token it was given was refused.
extension TokenStore {
    /// Removes `provider`'s stored access token when it is `value`, so the next process that
    /// needs one obtains a new one (a refresh token or the grant itself is kept). A newer
    /// token, stored meanwhile by another process, is kept. Returns whether one was removed.
    package func eraseAccessToken(provider: String, value: String) throws(TokenStoreError) -> Bool {
        try self.update { contents in
            guard var grant = contents.grants[provider], grant.accessToken == value else { return false }
            grant.accessToken = nil
            grant.expiresAt = nil
            grant.tokenType = nil
            contents.grants[provider] = grant
            return true
        }
    }
}
